/**
 * Turns a validated `POST /v1/pay` body into a payment intent: the recipient's shape picks the rail,
 * amounts are converted exactly, the fee is computed in integer maths. Every refusal is a 400 that
 * names the field and the fix.
 */
import { type BankRecipient, type PayRequest, evmAddressPattern, limits } from "@agentwallet/api";
import { getAddress, isAddress, zeroAddress } from "viem";
import type { Principal } from "../../domain/principal.ts";
import { badRequest } from "../../domain/errors.ts";
import { centsToMicros, feeFor, parseDecimalAmount } from "../../money.ts";
import type { PaymentIntent } from "./createPayment.ts";
import type { X402Request } from "./payByRequest.ts";

export type RecipientKind = { rail: "x402"; url: string } | { rail: "usdc_transfer"; address: `0x${string}` } | { rail: "fiat"; bank: BankRecipient };

export function classifyRecipient(recipient: PayRequest["recipient"]): RecipientKind {
  if (typeof recipient === "object") return { rail: "fiat", bank: recipient };
  const text = recipient.trim();
  if (/^0x/i.test(text)) return { rail: "usdc_transfer", address: checkAddress(text, "recipient") };
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) return { rail: "x402", url: checkUrl(text, "recipient") };
  throw badRequest("invalid_recipient", "recipient must be an https URL (x402), a 0x-prefixed EVM address (USDC on Base), or a bank details object {name, account_number, routing_number}.");
}

/**
 * An x402 target as every later step reads it (the controls' host rule, the fetcher, the stored
 * recipient): an absolute http(s) URL with a host, within the length bound. Checked here, before any
 * rule or rail sees it, for `POST /v1/pay` and `POST /v1/x402/pay` alike. Each endpoint keeps the codes it
 * has always answered: `/v1/pay` its `recipient`'s `invalid_recipient`, the deprecated endpoint the
 * fetcher's `url_invalid` / `scheme_not_allowed` (docs/errors.md).
 */
export function checkUrl(text: string, field: "recipient" | "url"): string {
  const invalid = field === "recipient" ? "invalid_recipient" : "url_invalid";
  const scheme = field === "recipient" ? "invalid_recipient" : "scheme_not_allowed";
  if (text.length > limits.urlMaxChars) throw badRequest(invalid, `${field} must be a URL of at most ${limits.urlMaxChars} characters.`);
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw badRequest(invalid, `${field} must be an https URL (https://host/path); "${text.slice(0, 80)}" is not a URL.`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") throw badRequest(scheme, `${field} must use https.`);
  if (url.hostname === "") throw badRequest(invalid, `${field} must be a URL that names a host.`);
  return text;
}

/**
 * An EVM address as the rails will use it: its EIP-55 checksummed form. All-lowercase and all-uppercase
 * hex carry no checksum and are accepted as they are (EIP-55); mixed case must match its checksum.
 * Normalised here, once, so nothing downstream (signing, storage, the answer) sees another form.
 */
export function checkAddress(text: string, field: string): `0x${string}` {
  if (!evmAddressPattern.test(text)) throw badRequest("invalid_recipient", `${field} must be 0x followed by 40 hexadecimal characters.`);
  // Mixed case carries an EIP-55 checksum: a mismatch means a mistyped address, so refuse it.
  if (!isAddress(text, { strict: true }) && text !== text.toLowerCase() && text.slice(2) !== text.slice(2).toUpperCase()) {
    throw badRequest("invalid_recipient", `${field} fails its EIP-55 checksum; check the address for typos (or send it all lowercase).`);
  }
  if (text.toLowerCase() === zeroAddress) throw badRequest("invalid_recipient", `${field} is the zero address; USDC sent there is lost.`);
  return getAddress(text.toLowerCase());
}

const URL_ONLY = ["max_amount_usdc", "method", "headers", "body", "quote_id"] as const;

/** What every payment request may carry beside its recipient and amount. */
export type PaymentExtras = { description: string | null; idempotencyKey: string | null; metadata?: Record<string, string> | null };

export function usdcIntent(p: { address: `0x${string}`; amountMicros: number; principal: Principal } & PaymentExtras): PaymentIntent {
  const fee = feeFor(p.amountMicros, p.principal.plan);
  return {
    rail: "usdc_transfer",
    railTxnType: "usdc_transfer",
    amountUnits: p.amountMicros,
    feeUnits: fee,
    amountMicros: p.amountMicros,
    feeMicros: fee,
    currency: "usdc",
    recipient: p.address,
    recipientJson: null,
    merchantName: null,
    description: p.description,
    idempotencyKey: p.idempotencyKey,
    metadata: p.metadata ?? null,
  };
}

export function fiatIntent(p: { bank: BankRecipient; amountCents: number; principal: Principal } & PaymentExtras): PaymentIntent {
  const feeCents = feeFor(p.amountCents, p.principal.plan);
  return {
    rail: "fiat",
    railTxnType: "payment",
    amountUnits: p.amountCents,
    feeUnits: feeCents,
    amountMicros: centsToMicros(p.amountCents),
    feeMicros: centsToMicros(feeCents),
    currency: "usd",
    recipient: p.bank.name,
    recipientJson: JSON.stringify(p.bank),
    merchantName: p.bank.name,
    description: p.description,
    idempotencyKey: p.idempotencyKey,
    metadata: p.metadata ?? null,
  };
}

/** Intent for the usdc_transfer and fiat rails of `POST /v1/pay` (x402 has its own flow). */
export function payIntent(body: PayRequest, kind: Exclude<RecipientKind, { rail: "x402" }>, principal: Principal): PaymentIntent {
  const misplaced = URL_ONLY.filter((f) => body[f] !== undefined);
  if (misplaced.length) throw badRequest("invalid_request", `${misplaced.join(", ")} ${misplaced.length > 1 ? "apply" : "applies"} only to URL (x402) recipients.`);
  if (body.amount_usd === undefined) throw badRequest("invalid_request", `amount_usd is required for ${kind.rail === "fiat" ? "bank" : "EVM address"} recipients (in US dollars, e.g. 12.5).`);
  const decimals = kind.rail === "fiat" ? 2 : 6;
  const max = kind.rail === "fiat" ? limits.fiatPaymentMaxUsd : limits.usdcTransferMaxUsd;
  const parsed = parseDecimalAmount(body.amount_usd, decimals);
  if (!parsed.ok) throw badRequest("invalid_amount", `amount_usd ${parsed.reason}${parsed.reason.includes("decimal places") ? ` (${kind.rail === "fiat" ? "bank payments are in cents" : "USDC has 6 decimals"})` : ""}.`);
  if (body.amount_usd > max) throw badRequest("invalid_amount", `amount_usd must be at most ${max.toLocaleString("en-US")} for ${kind.rail === "fiat" ? "bank payments" : "USDC transfers"}.`);
  const common = { principal, description: body.description ?? null, idempotencyKey: body.idempotency_key ?? null, metadata: body.metadata ?? null };
  return kind.rail === "fiat" ? fiatIntent({ ...common, bank: kind.bank, amountCents: parsed.units }) : usdcIntent({ ...common, address: kind.address, amountMicros: parsed.units });
}

/**
 * Request for the x402 rail (`POST /v1/pay` with a URL recipient, or the deprecated `POST /v1/x402/pay`):
 * the target sets the price, so `amount_usd` is refused; `max_amount_usdc` caps it.
 */
export function x402Request(
  b: Pick<PayRequest, "method" | "headers" | "body" | "max_amount_usdc" | "amount_usd" | "description" | "idempotency_key" | "metadata" | "quote_id">,
  url: string,
): X402Request {
  if (b.amount_usd !== undefined) throw badRequest("invalid_request", "amount_usd is not used for URL recipients: the target sets the price. Cap it with max_amount_usdc (micro-USDC).");
  return {
    rail: "x402",
    url,
    method: b.method ?? "GET",
    headers: b.headers,
    body: b.body,
    maxAmountMicros: b.max_amount_usdc ?? limits.x402MaxAmountMicrosMax,
    description: b.description ?? null,
    idempotencyKey: b.idempotency_key ?? null,
    metadata: b.metadata ?? null,
    quoteId: b.quote_id ?? null,
  };
}
