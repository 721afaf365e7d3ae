/**
 * The merchant's signed offer for the requirement we would pay (x402's offer-and-receipt extension:
 * `extensions["offer-receipt"].info.offers[]` of a v2 402), and whether it holds. The extension's types and
 * decoding are x402's own; the judgement is ours, as the spec asks of a verifier: an EIP-712 offer must
 * recover to a signer authorised for the resource (here the spec's simplest binding: the offer's payTo
 * signed it) and its terms must be the requirement's. A JWS offer is checked the same way (verifyJws.ts): its
 * `kid`'s key must verify it and be the payTo's; one whose key cannot be had offline (did:web) is not checked.
 */
import { type DecodedOffer, decodeSignedOffers, extractOffersFromPaymentRequired, isEIP712SignedOffer, verifyOfferSignatureEIP712 } from "@x402/extensions/offer-receipt";
import type { PaymentRequired } from "@x402/core/types";
import { checkJws, jwsAuthorisedFor } from "./verifyJws.ts";

/** What the quote reports of an offer. */
export type OfferReport = {
  format: "eip712" | "jws";
  payload: Record<string, unknown>;
  signature: string;
  verification: "verified" | "invalid" | "not_checked";
  signer: string | null;
  reason: string | null;
};

/** The terms an offer must state: the requirement chosen to pay. */
export type OfferTerms = { scheme: string; network: string; asset: string; payTo: string; amountMicros: number };

/** Offers a 402 carries are one per requirement; more is not an answer to walk through. */
const OFFERS_MAX = 16;

/** The offer matching `terms` (by its payload, as the spec asks, never by index), judged; null when none. */
export async function readOffer(paymentRequired: PaymentRequired, terms: OfferTerms, nowS: number): Promise<OfferReport | null> {
  let decoded: DecodedOffer[];
  try {
    decoded = decodeSignedOffers(extractOffersFromPaymentRequired(paymentRequired).slice(0, OFFERS_MAX));
  } catch {
    return null;
  }
  const same = (a: unknown, b: string) => typeof a === "string" && a.toLowerCase() === b.toLowerCase();
  const offer = decoded.find((o) => same(o.scheme, terms.scheme) && same(o.network, terms.network) && same(o.asset, terms.asset) && same(o.payTo, terms.payTo));
  if (!offer) return null;
  const { signedOffer } = offer;
  const payload = Object.fromEntries(Object.entries(offer).filter(([k]) => k !== "signedOffer" && k !== "format" && k !== "acceptIndex"));
  const report = (verification: OfferReport["verification"], signer: string | null, reason: string | null): OfferReport => ({ format: offer.format, payload, signature: signedOffer.signature, verification, signer, reason });
  let signer: string;
  if (!isEIP712SignedOffer(signedOffer)) {
    const jws = checkJws(signedOffer.signature);
    if (jws.kind === "unverifiable") return report("not_checked", null, `The JWS offer is not checked: ${jws.detail}.`);
    if (jws.kind === "invalid") return report("invalid", null, `The JWS offer does not hold: ${jws.detail}.`);
    signer = jws.address ?? jws.kid;
    if (!jwsAuthorisedFor(jws, String(offer.payTo))) return report("invalid", signer, `Signed by the key ${jws.kid.slice(0, 80)}${jws.address ? ` (address ${jws.address})` : ""}, which is not the offer's payTo ${String(offer.payTo)}: the signer is not shown to be authorised for the resource.`);
  } else {
    try {
      signer = (await verifyOfferSignatureEIP712(signedOffer)).signer;
    } catch (err) {
      return report("invalid", null, `The signature does not verify (${String((err as Error).message).slice(0, 120)}).`);
    }
    if (!same(signer, String(offer.payTo))) return report("invalid", signer, `Signed by ${signer}, which is not the offer's payTo ${String(offer.payTo)}: the signer is not shown to be authorised for the resource.`);
  }
  if (String(offer.amount) !== String(terms.amountMicros)) return report("invalid", signer, `The offer states amount ${String(offer.amount)}, the requirement ${terms.amountMicros}.`);
  if (typeof offer.validUntil === "number" && offer.validUntil > 0 && offer.validUntil < nowS) return report("invalid", signer, `The offer expired at ${new Date(offer.validUntil * 1000).toISOString()}.`);
  return report("verified", signer, null);
}
