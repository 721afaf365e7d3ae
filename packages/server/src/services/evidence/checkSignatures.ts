/**
 * The signatures an evidence record carries, checked again from the record alone: every EIP-3009
 * authorization the project wallet signed (relayed legs and fee sweeps keep theirs; an x402 payment's is in
 * the exact payment header that was sent), and the merchant's receipt of x402's offer-and-receipt extension,
 * with the signer's authorisation the spec requires (§4.5.1: the simplest mechanism, the key of the `payTo`
 * address the payment went to; a signer that is not it is reported as not authorised).
 *
 * @x402/extensions gives the receipt's types and EIP-712 schema; the verification is ours, from the spec.
 * A JWS receipt needs its `kid` resolved to a key, which a record alone cannot do: it is reported as such.
 */
import { RECEIPT_TYPES, type SignedReceipt } from "@x402/extensions/offer-receipt";
import { type Address, type Hex, getAddress, recoverTypedDataAddress } from "viem";
import { USDC_EIP712, transferWithAuthorizationTypes } from "../../rails/eip3009.ts";

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

/** The receipt's EIP-712 signature (spec §5.5), and its signer authorised for the resource: the `payTo` key. */
export async function checkReceipt(receipt: SignedReceipt, payTo: string): Promise<SignatureProblem | undefined> {
  if (receipt.format !== "eip712") return { code: "receipt_unverifiable", detail: `a ${String(receipt.format)} receipt names its key by a kid this check cannot resolve offline` };
  const payload = (receipt as { payload?: unknown }).payload as Record<string, unknown> | undefined;
  const chainId = typeof payload?.network === "string" && /^eip155:\d+$/.test(payload.network) ? Number(payload.network.slice(7)) : undefined;
  if (!payload || chainId === undefined) return { code: "receipt_signature_invalid", detail: "the receipt's payload is missing or names no eip155 network" };
  let signer: Address;
  try {
    signer = await recoverTypedDataAddress({
      domain: { name: "x402 receipt", version: "1", chainId },
      types: RECEIPT_TYPES,
      primaryType: "Receipt",
      message: { network: String(payload.network), resourceUrl: String(payload.resourceUrl), payer: String(payload.payer), issuedAt: BigInt(Number(payload.issuedAt ?? 0)), transaction: String(payload.transaction ?? "") },
      signature: receipt.signature as Hex,
    });
  } catch {
    return { code: "receipt_signature_invalid", detail: "the receipt's signature does not recover a signer" };
  }
  if (getAddress(signer) !== getAddress(payTo)) {
    return { code: "receipt_signer_not_authorized", detail: `the receipt is signed by ${signer}, a key not authorised for the resource (its payTo is ${getAddress(payTo)})` };
  }
  return undefined;
}
