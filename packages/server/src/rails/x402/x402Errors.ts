/**
 * Expected refusals and failures of the x402 rail, as API errors with stable snake_case codes. Every
 * refusal here happens before anything is signed: the detail says so, and says what to change.
 * The fetcher's own codes (url_invalid, host_not_allowed, timeout, ...) pass through unchanged: see
 * safeFetchErrors.ts.
 *
 * | code                               | status | meaning                                                            |
 * |------------------------------------|--------|--------------------------------------------------------------------|
 * | `x402_price_above_max`             | 400    | the target asks more than max_amount_usdc                          |
 * | `x402_no_supported_requirement`    | 400    | no requirement with scheme `exact` on Base (eip155:8453 / base)    |
 * | `x402_asset_not_allowed`           | 400    | the asset is not our USDC on that network                          |
 * | `x402_eip712_domain_invalid`       | 400    | extra.name / extra.version missing or not USDC's ("USD Coin", "2") |
 * | `x402_transfer_method_unsupported` | 400    | extra asks for Permit2 or a non-authorization payment flow         |
 * | `x402_pay_to_invalid`              | 400    | payTo is not an address, fails its checksum, or is the zero address |
 * | `x402_pay_to_own_wallet`           | 400    | payTo is one of the service's own wallets or contracts             |
 * | `x402_max_timeout_invalid`         | 400    | maxTimeoutSeconds is not an integer from 1 to the configured bound |
 * | `x402_amount_invalid`              | 400    | amount is not a plain positive integer up to 100 USDC              |
 * | `x402_payment_required_invalid`    | 502    | the 402 answer carries no readable payment requirements            |
 */
import { ApiError } from "../../domain/errors.ts";
import { SafeFetchError } from "../safeFetchErrors.ts";

export const X402_REFUSAL_CODES = [
  "x402_price_above_max",
  "x402_no_supported_requirement",
  "x402_asset_not_allowed",
  "x402_eip712_domain_invalid",
  "x402_transfer_method_unsupported",
  "x402_pay_to_invalid",
  "x402_pay_to_own_wallet",
  "x402_max_timeout_invalid",
  "x402_amount_invalid",
] as const;

export type X402RefusalCode = (typeof X402_REFUSAL_CODES)[number];

/** A reason not to pay a payment requirement; becomes a 400 when no requirement is payable. */
export type Refusal = { code: X402RefusalCode; detail: string };

const NOTHING_PAID = "Nothing was signed or charged.";

export function refusalError(r: Refusal): ApiError {
  return new ApiError(400, r.code, `${r.detail} ${NOTHING_PAID}`);
}

export function paymentRequiredInvalid(detail: string): ApiError {
  return new ApiError(502, "x402_payment_required_invalid", `The target answered 402 but ${detail}; it is not a payable x402 answer. ${NOTHING_PAID}`);
}

/** Failures the caller can fix by changing the request are 400; the target failing is 502. */
const CALLER_FAULTS: ReadonlySet<string> = new Set(["url_invalid", "scheme_not_allowed", "host_not_allowed", "request_invalid"]);

/** A fetch failure that left nothing charged (nothing signed, or a signature that never left). */
export function fetchFailed(err: SafeFetchError, when: "request" | "paid_retry"): ApiError {
  const tail = when === "request" ? NOTHING_PAID : "The signed payment never reached the target, so nothing was charged; the hold was released.";
  return new ApiError(CALLER_FAULTS.has(err.code) ? 400 : 502, err.code, `${err.message} ${tail}`);
}
