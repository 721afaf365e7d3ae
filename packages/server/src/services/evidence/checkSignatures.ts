/**
 * The signatures an evidence record carries, checked again from the record alone: every EIP-3009
 * authorization the project wallet signed (relayed legs and fee sweeps keep theirs; an x402 payment's is in
 * the exact payment header that was sent), and the merchant's receipt of x402's offer-and-receipt extension,
 * with the signer's authorisation the spec requires (§4.5.1: the simplest mechanism, the key of the `payTo`
 * address the payment went to; a signer that is not it is reported as not authorised).
 *
 * @x402/extensions gives the receipt's types and recovers an EIP-712 signer; the judgement is ours, from the spec.
 * A JWS receipt is verified under the key its `kid` holds (rails/x402/verifyJws.ts); one whose key would have to be
 * fetched (did:web) is reported as unverifiable.
 */
import { type SignedReceipt, extractOffersFromPaymentRequired, isEIP712SignedOffer, isEIP712SignedReceipt, verifyOfferSignatureEIP712, verifyReceiptSignatureEIP712 } from "@x402/extensions/offer-receipt";
import { type Address, type Hex, getAddress, recoverTypedDataAddress } from "viem";
import { USDC_EIP712, transferWithAuthorizationTypes } from "../../rails/eip3009.ts";
import { checkJws, jwsAuthorisedFor } from "../../rails/x402/verifyJws.ts";

export type SignatureProblem = { code: "authorization_signature_invalid" | "payload_mismatch" | "receipt_signature_invalid" | "receipt_signer_not_authorized" | "receipt_unverifiable"; detail: string };

/** Where signatures are checked: the chain id and USDC contract of their EIP-712 domain. */
export type SignatureDomain = { chainId: number; usdc: Address };

type Auth = { from: string; to: string; value: string; validAfter: string; validBefore: string; nonce: string; signature?: string };

function isAuthorization(v: unknown): v is Auth & { signature: string } {
  const o = v as Record<string, unknown>;
  return typeof o === "object" && o !== null && ["from", "to", "value", "validAfter", "validBefore", "nonce", "signature"].every((k) => typeof o[k] === "string");
}

/** Whether `a` is signed by its `from` for USDC on the domain's chain. */
export async function authorizationSigned(a: Auth & { signature: string }, d: SignatureDomain): Promise<boolean> {
  try {
    const signer = await recoverTypedDataAddress({
      domain: { ...USDC_EIP712, chainId: d.chainId, verifyingContract: d.usdc },
      types: transferWithAuthorizationTypes,
      primaryType: "TransferWithAuthorization",
      message: { from: a.from as Address, to: a.to as Address, value: BigInt(a.value), validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore), nonce: a.nonce as Hex },
      signature: a.signature as Hex,
    });
    return signer.toLowerCase() === a.from.toLowerCase();
  } catch {
    return false;
  }
}

/** Every signed authorization anywhere in a rail state (legs, fee sweeps, transfers sent again), bounded in depth. */
export function authorizationsIn(v: unknown, depth = 0, out: (Auth & { signature: string })[] = []): (Auth & { signature: string })[] {
  if (depth > 6 || typeof v !== "object" || v === null) return out;
  if (isAuthorization(v)) out.push(v);
  else for (const child of Object.values(v)) authorizationsIn(child, depth + 1, out);
  return out;
}

/** The x402 payment payload a header carries (v2 `PAYMENT-SIGNATURE`, v1 `X-PAYMENT`: base64 JSON). */
export function decodePaymentHeader(value: string): { payload?: { authorization?: Auth; signature?: string } } & Record<string, unknown> {
  return JSON.parse(Buffer.from(value, "base64").toString("utf8"));
}

/**
 * The x402 payment header as sent: its authorization must be the one the state records and carry the
 * wallet's signature over it.
 */
export async function checkSentPayload(sent: { name: string; value: string }, recorded: Omit<Auth, "signature">, d: SignatureDomain): Promise<SignatureProblem | undefined> {
  let p: ReturnType<typeof decodePaymentHeader>;
  try {
    p = decodePaymentHeader(sent.value);
  } catch {
    return { code: "payload_mismatch", detail: `the ${sent.name} header sent does not decode as an x402 payload` };
  }
  const a = p.payload?.authorization;
  const signature = p.payload?.signature;
  const same = a && (["from", "to", "value", "validAfter", "validBefore", "nonce"] as const).every((k) => String(a[k]).toLowerCase() === String(recorded[k]).toLowerCase());
  if (!a || !same || typeof signature !== "string") return { code: "payload_mismatch", detail: `the ${sent.name} header sent carries another authorization than the one recorded` };
  if (!(await authorizationSigned({ ...a, signature }, d))) return { code: "authorization_signature_invalid", detail: `the signature in the ${sent.name} header sent is not ${a.from}'s over its authorization` };
  return undefined;
}

/** The receipt in a merchant's settlement response (`extensions["offer-receipt"].info.receipt`), if any. */
export function receiptOf(settleResponse: unknown): SignedReceipt | undefined {
  const info = (settleResponse as { extensions?: Record<string, { info?: { receipt?: unknown } }> })?.extensions?.["offer-receipt"]?.info;
  const r = info?.receipt as SignedReceipt | undefined;
  return r && typeof r === "object" && typeof r.signature === "string" ? r : undefined;
}

/**
 * The receipt's EIP-712 signature (spec §5.5: x402's receipt domain and types, checked by @x402/extensions'
 * own recovery) and its signer's authorisation for the resource: the `payTo` key. An EIP-712 receipt names
 * no key, so a changed signature or payload recovers some other key: one the merchant never showed — neither
 * the payTo nor the signer of the offer in its 402 — is reported as an invalid signature; the key that
 * signed its offer, when that key is not the payTo, as a signer not authorised.
 */
export async function checkReceipt(receipt: SignedReceipt, payTo: string, offerSigners: readonly string[] = []): Promise<SignatureProblem | undefined> {
  if (!isEIP712SignedReceipt(receipt)) return checkJwsReceipt(receipt.signature, payTo);
  let signer: Address;
  try {
    signer = (await verifyReceiptSignatureEIP712(receipt)).signer;
  } catch (err) {
    return { code: "receipt_signature_invalid", detail: `the receipt's signature does not recover a signer (${String((err as Error).message).slice(0, 120)})` };
  }
  const payToAddress = getAddress(payTo);
  if (getAddress(signer) === payToAddress) return undefined;
  if (offerSigners.some((k) => getAddress(k) === getAddress(signer))) {
    return { code: "receipt_signer_not_authorized", detail: `the receipt is signed by ${signer}, the key that signed the merchant's offer but not one authorised for the resource (its payTo is ${payToAddress})` };
  }
  return { code: "receipt_signature_invalid", detail: `the receipt's signature recovers ${signer}, a key the merchant never showed (neither the payTo ${payToAddress} nor its offer's signer): the receipt or its signature was altered` };
}

/** A JWS receipt: its signature under its kid's key, and that key's authorisation (the payTo's). */
function checkJwsReceipt(compact: string, payTo: string): SignatureProblem | undefined {
  const jws = checkJws(compact);
  if (jws.kind === "unverifiable") return { code: "receipt_unverifiable", detail: `the JWS receipt cannot be checked offline: ${jws.detail}` };
  if (jws.kind === "invalid") return { code: "receipt_signature_invalid", detail: `the JWS receipt does not hold: ${jws.detail}` };
  if (jwsAuthorisedFor(jws, payTo)) return undefined;
  return { code: "receipt_signer_not_authorized", detail: `the JWS receipt is signed by the key ${jws.kid.slice(0, 80)}${jws.address ? ` (address ${jws.address})` : ""}, not one authorised for the resource (its payTo is ${payTo})` };
}

/** The keys that signed the EIP-712 offers of a 402 as received (x402's offer-and-receipt extension). */
export async function offerSignersOf(paymentRequired: unknown): Promise<string[]> {
  const signers: string[] = [];
  let offers: unknown[];
  try {
    offers = extractOffersFromPaymentRequired(paymentRequired as never).slice(0, OFFERS_MAX);
  } catch {
    return signers;
  }
  for (const offer of offers) {
    if (!isEIP712SignedOffer(offer as never)) continue;
    try {
      signers.push((await verifyOfferSignatureEIP712(offer as never)).signer);
    } catch {
      // An offer that does not recover shows no key.
    }
  }
  return signers;
}

/** Offers a 402 carries are one per requirement; more is not an answer to walk through. */
const OFFERS_MAX = 16;
