/**
 * Expected refusals and failures of the x402 rail, as domain errors with stable snake_case codes and a
 * kind (`invalid`: the caller can fix it; `upstream`: the target failed), which the HTTP layer maps to a
 * status (http/errorStatus.ts: 400 and 502). Every refusal here happens before anything is signed:
 * the detail says so, and says what to change.
 * The fetcher's own codes (url_invalid, host_not_allowed, timeout, ...) pass through unchanged: see
 * safeFetchErrors.ts.
 *
 * | code                               | kind     | meaning                                                            |
 * |------------------------------------|----------|--------------------------------------------------------------------|
 * | `x402_price_above_max`             | invalid  | the target asks more than max_amount_usdc                          |
 * | `x402_no_supported_requirement`    | invalid  | no requirement with scheme `exact` on Base (eip155:8453 / base)    |
 * | `x402_asset_not_allowed`           | invalid  | the asset is not our USDC on that network                          |
 * | `x402_eip712_domain_invalid`       | invalid  | extra.name / extra.version missing or not USDC's ("USD Coin", "2") |
 * | `x402_transfer_method_unsupported` | invalid  | extra asks for Permit2 or a non-authorization payment flow         |
 * | `x402_pay_to_invalid`              | invalid  | payTo is not an address, fails its checksum, or is the zero address |
 * | `x402_pay_to_own_wallet`           | invalid  | payTo is one of the service's own wallets or contracts             |
 * | `x402_max_timeout_invalid`         | invalid  | maxTimeoutSeconds is not an integer from 1 to the configured bound |
 * | `x402_amount_invalid`              | invalid  | amount is not a plain positive integer up to 100 USDC              |
 * | `x402_payment_required_invalid`    | upstream | the 402 answer carries no readable payment requirements            |
 */
import { X402_REFUSAL_CODES } from "../../domain/errorCodes.ts";
import { type DomainError, badRequest, upstream } from "../../domain/errors.ts";
import { SafeFetchError } from "../../net/safeFetchErrors.ts";
import { formatUsdc } from "../../money.ts";

export { X402_REFUSAL_CODES };

export type X402RefusalCode = (typeof X402_REFUSAL_CODES)[number];

/** A reason not to pay a payment requirement; thrown (`invalid`) when no requirement is payable. */
export type Refusal = { code: X402RefusalCode; detail: string };

const NOTHING_PAID = "Nothing was signed or charged.";

export function refusalError(r: Refusal): DomainError {
  return badRequest(r.code, `${r.detail} ${NOTHING_PAID}`);
}

/** The cheapest payable offer costs more than the caller's `max_amount_usdc`. */
export function priceAboveMax(amountMicros: number, maxAmountMicros: number): DomainError {
  return refusalError({
    code: "x402_price_above_max",
    detail: `The target asks ${formatUsdc(amountMicros)} USDC (${amountMicros} micro-USDC), more than max_amount_usdc ${maxAmountMicros} (${formatUsdc(maxAmountMicros)} USDC). Raise max_amount_usdc to pay it.`,
  });
}

/** A value from the target, shown briefly and safely in a detail. */
export function showTargetValue(value: unknown): string {
  if (value === undefined) return "(missing)";
  const text = typeof value === "string" ? JSON.stringify(value) : String(JSON.stringify(value) ?? value);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function paymentRequiredInvalid(detail: string): DomainError {
  return upstream("x402_payment_required_invalid", `The target answered 402 but ${detail}; it is not a payable x402 answer. ${NOTHING_PAID}`);
}

/** Failures the caller can fix by changing the request are `invalid`; the target failing is `upstream`. */
const CALLER_FAULTS: ReadonlySet<string> = new Set(["url_invalid", "scheme_not_allowed", "host_not_allowed", "request_invalid"]);

/** A fetch failure that left nothing charged (nothing signed, or a signature that never left). */
export function fetchFailed(err: SafeFetchError, when: "request" | "paid_retry"): DomainError {
  const tail = when === "request" ? NOTHING_PAID : "The signed payment never reached the target, so nothing was charged; the hold was released.";
  return (CALLER_FAULTS.has(err.code) ? badRequest : upstream)(err.code, `${err.message} ${tail}`);
}
