/**
 * Why a payment failed or was reversed: a stable snake_case code stored with the payment
 * (`payments.failure_code`) and shown as `failure_code` beside the human `failure_message`
 * (`payments.failure_reason`: the revert, the ACH return code, the merchant's answer…). One list for
 * every rail and provider; docs/errors.md explains each code. Add a code here (and there) rather
 * than reusing one whose meaning differs: clients branch on it.
 */
export const FAILURE_CODES = [
  /** The wallet refused to sign the transfer (an address it cannot use, a malformed authorization). */
  "signing_refused",
  /** The on-chain transfer reverted (e.g. the project wallet on-chain held less than the ledger). */
  "onchain_reverted",
  /** USDC's issuer froze (blacklisted) the project's wallet: no transfer from it can move; payments are refused until it is released. */
  "wallet_frozen",
  /** USDC's issuer blocked (blacklisted) the recipient: no USDC can be sent to that address. */
  "recipient_blocked",
  /** USDC is paused by its issuer: no transfer moves until it is unpaused. */
  "token_paused",
  /** The project wallet held less USDC on-chain than the transfer (the ledger counts more than the chain). */
  "wallet_underfunded",
  /** The signed EIP-3009 authorization expired before any transaction used it. */
  "authorization_expired",
  /** A step kept failing with errors a retry may cure (RPC unreachable, relayer not mined) until the retry bound. */
  "retries_exhausted",
  /** The off-ramp refused to create the payout (e.g. bank details it does not accept). */
  "payout_refused",
  /** The payout failed at the bank or the provider (its reason is the message). */
  "payout_failed",
  /** The payout completed and was then returned by the bank (an ACH return; the return code is the message). */
  "ach_returned",
  /** x402: the merchant did not settle the signed authorization before it expired. */
  "x402_not_settled",
  /** x402: the signed payment never left this service or never reached the target. */
  "x402_not_sent",
  /** A person denied the payment, which waited for approval above the token's `approval_above_usd`. */
  "approval_denied",
  /** Nobody approved the payment within the approval time (APPROVAL_TIMEOUT_MS, 24 h by default). */
  "approval_expired",
  /** An operator ended the payment by hand as failed (`agentwallet payments resolve`): its rail state did not parse. */
  "operator_resolved",
] as const;

export type FailureCode = (typeof FAILURE_CODES)[number];

/** A code and its human message, as a rail reports a payment's end. */
export type FailureReason = { code: FailureCode; message: string };

export function isFailureCode(s: unknown): s is FailureCode {
  return typeof s === "string" && (FAILURE_CODES as readonly string[]).includes(s);
}
