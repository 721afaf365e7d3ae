/**
 * Why a payment failed, was reversed or was refused, as a sentence a person reads, with amounts in dollars:
 * the one place the console turns the service's codes (docs/errors.md, "Failure codes of payments" and the
 * 403 refusals of spending controls) into words. A code this list does not know is shown with the service's
 * own message, so a new code is never hidden.
 */
import type { RefusalItem, RefusalLimit } from "./backend.ts";
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

/** A payment the spending controls refused before anything was held, as a sentence with dollars. */
export function refusalSentence(r: Pick<RefusalItem, "code" | "detail" | "amount_micros" | "limit">): string {
  const amount = r.amount_micros !== null ? ` of ${dollars(r.amount_micros)}` : "";
  if (r.code === "spending_limit_exceeded" && r.limit) return limitSentence(amount, r.limit);
  if (r.code === "recipient_not_allowed") return `Refused: this payment${amount} goes to a recipient the spending controls do not allow.`;
  if (r.code === "rail_not_allowed") return `Refused: this payment${amount} uses a rail the spending controls do not allow.`;
  if (r.code === "approval_required") return `Refused: this x402 payment${amount} is above the amount that needs a person's approval, and a merchant's request cannot wait for one.`;
  // Another code, or a limit refusal recorded before its measures were kept: the service's own detail.
  return `Refused: ${r.detail}`;
}

const RULE_WORDS: Record<RefusalLimit["rule"], string> = { per_payment: "per-payment limit", daily: "daily limit", weekly: "weekly limit", monthly: "monthly limit", all_time: "all-time limit", allowance: "allowance" };
const SPENT_WHEN: Record<RefusalLimit["rule"], string> = { per_payment: "", daily: " today", weekly: " this week", monthly: " this month", all_time: " in all", allowance: "" };

/** "Refused: this payment of $3.00 is above the agent's daily limit of $2.00 ($1.50 spent today, $0.50 left)." and the like, from the recorded numbers. */
function limitSentence(amount: string, l: RefusalLimit): string {
  const rule = whoseRule(l, `${RULE_WORDS[l.rule]} of ${dollars(l.limit_micros)}`);
  if (l.rule === "per_payment") return `Refused: this payment${amount} is above ${rule}.`;
  // Above the whole limit: its window was not read, so nothing is said of what is left.
  if (l.spent_micros === null || l.remaining_micros === null) return `Refused: this payment${amount} is larger than the whole of ${rule}.`;
  const left = `${dollars(l.spent_micros)} spent${SPENT_WHEN[l.rule]}, ${dollars(l.remaining_micros)} left`;
  return l.rule === "allowance" ? `Refused: this payment${amount} is above what is left of ${rule} (${left}).` : `Refused: this payment${amount} is above ${rule} (${left}).`;
}

/** The rule with whose it is: the paying agent's, the project's, or an agent's above it (by name, else its prefix). */
function whoseRule(l: RefusalLimit, rule: string): string {
  if (l.level === "token") return `the agent's ${rule}`;
  if (l.level === "project") return `the project's ${rule}`;
  return l.owner ? `the ${rule} set on ${l.owner.name ?? `${l.owner.prefix}…`}, an agent above this one` : `the ${rule} of an agent above this one`;
}
