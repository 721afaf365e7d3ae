/**
 * Why a payment failed, was reversed or was refused, as a sentence a person reads, with amounts in dollars:
 * the one place the console turns the service's codes (docs/errors.md, "Failure codes of payments" and the
 * 403 refusals of spending controls) into words. A code this list does not know is shown with the service's
 * own message, so a new code is never hidden.
 */
import type { RefusalItem } from "./backend.ts";
import { formatMicros } from "./format.ts";

const dollars = (micros: number) => `$${formatMicros(micros)}`;

/** What happened to a failed or reversed payment, by its `failure_code`; the message completes it where it carries the reason. */
const FAILURES: Record<string, (message: string) => string> = {
  signing_refused: () => "Failed: the project wallet refused to sign this transfer, so nothing was sent. Check the recipient and pay again.",
  onchain_reverted: (m) => `Failed: the USDC transfer was rejected on-chain and moved nothing${m ? ` (${m})` : ""}.`,
  wallet_frozen: () => "Failed: USDC's issuer has frozen the project's wallet, so nothing can be sent from it until the freeze is lifted.",
  recipient_blocked: () => "Failed: USDC's issuer blocks the recipient's address; no USDC can be sent there.",
  token_paused: () => "Failed: USDC is paused by its issuer; nothing moves until it is unpaused. Pay again then.",
  wallet_underfunded: () => "Failed: the project wallet held less USDC on-chain than the ledger counted. An operator should reconcile the wallet.",
  authorization_expired: () => "Failed: the signed transfer expired before it was sent; nothing moved. Pay again.",
  retries_exhausted: () => "Failed: a step kept failing (the chain could not be reached, or the transaction was not mined) until the service gave up; nothing was sent. Pay again later.",
  payout_refused: (m) => `Failed: the bank payout provider refused this payment${m ? ` (${m})` : ""}. Check the bank details.`,
  payout_failed: (m) => `Failed: the bank or the payout provider could not complete this payment${m ? ` (${m})` : ""}. Correct the bank details and pay again.`,
  ach_returned: (m) => `Returned by the bank after it was paid${m ? ` (${m})` : ""}; the amount was credited back, the fee was kept.`,
  approval_denied: (m) => `Denied: a person declined this payment${m ? ` (${m})` : ""}; the amount and fee were credited back.`,
  approval_expired: () => "Expired: nobody approved this payment in time; the amount and fee were credited back.",
  operator_resolved: (m) => `Ended by an operator by hand${m ? `: ${m}` : ""}; the amount and fee were credited back.`,
  x402_not_settled: () => "Failed: the merchant did not collect the signed payment before it expired; nothing was charged.",
  x402_not_sent: () => "Failed: the signed payment never reached the merchant; nothing was charged. Try again.",
};

/** A failed or reversed payment's outcome as a sentence. */
export function failureSentence(code: string | null, message: string | null, status: string): string {
  const m = message?.trim() ?? "";
  const known = code ? FAILURES[code] : undefined;
  if (known) return known(m);
  const verb = status === "reversed" ? "Reversed" : "Failed";
  return m ? `${verb}: ${m}` : `${verb}${code ? ` (${code})` : ""}.`;
}

const USD = String.raw`(\d+\.\d{6}) USD`;
const toMicros = (text: string) => Math.round(Number(text) * 1_000_000);
const WINDOW_WORD: Record<string, string> = { daily: "today", weekly: "this week", monthly: "this month", "all-time": "in all" };

/** A payment the spending controls refused before anything was held, as a sentence with dollars. */
export function refusalSentence(r: Pick<RefusalItem, "code" | "detail" | "amount_micros">): string {
  const amount = r.amount_micros !== null ? ` of ${dollars(r.amount_micros)}` : "";
  if (r.code === "spending_limit_exceeded") {
    // The service's detail (domain/spending.ts): "... the <who>'s <kind> limit is X USD; spent Y USD ..., remaining Z USD, and this payment is W USD."
    const window = new RegExp(String.raw`the (.+?)'s (daily|weekly|monthly|all-time) limit is ${USD}; spent ${USD} .*?remaining ${USD}`).exec(r.detail);
    if (window) {
      const [, who, kind, limit, , remaining] = window;
      return `Refused: this payment${amount} is above the ${whose(who!)} ${kind} limit of ${dollars(toMicros(limit!))} (${dollars(toMicros(remaining!))} left ${WINDOW_WORD[kind!]}).`;
    }
    const allowance = new RegExp(String.raw`the (.+?)'s allowance is ${USD}; spent ${USD} .*?remaining ${USD}`).exec(r.detail);
    if (allowance) return `Refused: this payment${amount} is above what is left of the ${whose(allowance[1]!)} allowance of ${dollars(toMicros(allowance[2]!))} (${dollars(toMicros(allowance[4]!))} left).`;
    const each = new RegExp(String.raw`per_payment limit is ${USD}`).exec(r.detail);
    if (each) return `Refused: this payment${amount} is above the per-payment limit of ${dollars(toMicros(each[1]!))}.`;
    return `Refused: this payment${amount} is above a spending limit.`;
  }
  if (r.code === "recipient_not_allowed") return `Refused: this payment${amount} goes to a recipient the spending controls do not allow.`;
  if (r.code === "rail_not_allowed") return `Refused: this payment${amount} uses a rail the spending controls do not allow.`;
  if (r.code === "approval_required") return `Refused: this x402 payment${amount} is above the amount that needs a person's approval, and a merchant's request cannot wait for one.`;
  return `Refused: ${r.detail}`;
}

/** "token"/"project"/an agent's name in the service's detail → the words of the sentence. */
function whose(who: string): string {
  if (who === "token") return "agent's";
  if (who === "project") return "project's";
  return `${who}'s`;
}
