/**
 * One rule for every settlement step that throws, used by the dispatcher and the payment worker alike.
 * The error is classified once:
 * - permanent (no retry can cure it: the signer refuses the address, a rail says so with
 *   `PermanentFailure`): the payment fails at once, credited back, with its code;
 * - transient (RPC timeouts and connection errors, the relayer not mined, a database hiccup, anything
 *   unknown): tried again after a delay that doubles from `backoffMinMs` to `backoffMaxMs`; once the
 *   payment's steps failed `stepErrorsMax` times it fails, credited back, `retries_exhausted`.
 * - corrupt (its rail state does not parse, rails/railState.ts `CorruptRailState`): nothing can be known of
 *   what was sent, so nothing is guessed: the payment is left as it is (not failed, not counted), logged as an
 *   error with its id at every look, and looked at again only after the maximum delay, until an operator
 *   repairs or resolves it. The other payments settle on meanwhile.
 * Failing is only ever done while nothing was sent: the payment is `pending` without a relayer
 * transaction (re-read after the error), so no signed transfer of it exists that could still move money.
 * A payment with a transfer out (or money already moved) is never credited back on an error: the chain
 * decides it (a receipt, a revert, the authorization's expiry); until then its steps keep backing off at
 * the maximum delay, and reaching the bound is logged as an error for operators.
 */
import type { Logger } from "pino";
import { SigningRefusedError } from "../chain/signingPool.ts";
import { RelayerBusyError, StaleStepError } from "../chain/relayer.ts";
import type { FailureCode } from "../ledger/failureCodes.ts";
import type { PaymentStore } from "../ledger/ports.ts";
import type { Payment } from "../domain/payment.ts";
import { PermanentFailure } from "../rails/permanentFailure.ts";
import { CorruptRailState } from "../rails/railState.ts";

export type StepError =
  | { kind: "stale" }
  | { kind: "corrupt"; message: string }
  | { kind: "permanent"; code: FailureCode; message: string }
  | { kind: "transient"; message: string };

export type RetryPolicy = { stepErrorsMax: number; backoffMinMs: number; backoffMaxMs: number };

/** What the rule needs of the running service (the app context has it all). */
export type RetryDeps = { ledger: { payments: Pick<PaymentStore, "getPayment" | "resolve"> }; logger: Logger; config: { workers: { retry: RetryPolicy } } };

/** What to do after a failed step: nothing (another process has it, or it is final now), or look again in `inMs`. */
export type StepErrorOutcome = { kind: "stale" } | { kind: "final"; payment: Payment } | { kind: "retry"; inMs: number; stepErrors: number | undefined };

/** Errors the signer raises for input it will never sign (viem's address checks when signing on the caller's thread). */
const SIGNER_REFUSALS = new Set(["InvalidAddressError", "InvalidChecksumAddressError"]);

export function classifyStepError(err: unknown): StepError {
  if (err instanceof StaleStepError) return { kind: "stale" };
  if (err instanceof CorruptRailState) return { kind: "corrupt", message: err.message };
  if (err instanceof PermanentFailure) return { kind: "permanent", code: err.code, message: err.message };
  const name = (err as { name?: string } | null)?.name ?? "";
  if (err instanceof SigningRefusedError || SIGNER_REFUSALS.has(name)) {
    return { kind: "permanent", code: "signing_refused", message: `The project wallet refused to sign the transfer (${shortMessage(err)}); nothing was sent, the amount and fee were credited back.` };
  }
  return { kind: "transient", message: shortMessage(err) };
}

/** The delay before the next try after the `stepErrors`-th failed step (1-based): doubling, capped. */
export function backoffMs(policy: RetryPolicy, stepErrors: number): number {
  return Math.min(policy.backoffMaxMs, policy.backoffMinMs * 2 ** Math.min(Math.max(0, stepErrors - 1), 30));
}

/** Whether nothing of the payment was sent: no relayer transaction, not submitted anywhere. */
export function nothingSent(p: Payment): boolean {
  return p.status === "pending" && p.txHash === null;
}

/**
 * Applies the rule to a step of `read` (the row the step started from) that threw `err`. The payment is
 * read again: the decision to fail needs it as it is now. Failing goes through `payments.resolve`, which
 * changes an open payment at most once.
 */
export async function handleStepError(
  ctx: RetryDeps,
  read: Payment,
  err: unknown,
  onFinal?: (p: Payment, outcome: "failed") => void,
): Promise<StepErrorOutcome> {
  const policy = ctx.config.workers.retry;
  const e = classifyStepError(err);
  if (e.kind === "stale") return e;
  if (e.kind === "corrupt") {
    // Nothing is read again or written: the row is left exactly as it is for an operator.
    ctx.logger.error({ payment_id: read.id, rail: read.rail, status: read.status, err: e.message }, "payment's rail state does not parse; it is left untouched for an operator and settles no further until repaired");
    return { kind: "retry", inMs: policy.backoffMaxMs, stepErrors: undefined };
  }
  const p = (await ctx.ledger.payments.getPayment(read.id)) ?? read;
  if (p.status !== "pending" && p.status !== "processing") return { kind: "final", payment: p };
  const stepErrors = p.stepErrors + 1;
  const safe = nothingSent(p);
  const fail = async (code: FailureCode, message: string): Promise<StepErrorOutcome> => {
    const r = await ctx.ledger.payments.resolve(p.id, "failed", { failureCode: code, failureReason: message });
    if (r.changed) {
      ctx.logger.warn({ payment_id: p.id, failure_code: code, step_errors: stepErrors, err }, "payment failed and credited back");
      onFinal?.(r.payment, "failed");
    }
    return { kind: "final", payment: r.payment };
  };
  if (e.kind === "permanent" && safe) return fail(e.code, e.message);
  if (e.kind === "transient" && safe && stepErrors >= policy.stepErrorsMax) {
    return fail("retries_exhausted", `The payment could not be sent after ${stepErrors} attempts (last error: ${e.message}); nothing was sent, the amount and fee were credited back.`);
  }
  if (!safe && (e.kind === "permanent" || stepErrors === policy.stepErrorsMax)) {
    // A transfer of it is out (or money moved): only the chain can end it. Said loudly, once at the bound.
    ctx.logger.error({ payment_id: p.id, step_errors: stepErrors, err }, "payment step keeps failing with a transfer out; it stays open until the chain decides it");
  } else if (e.kind === "transient" && !(err instanceof RelayerBusyError)) {
    // (The relayer logs a busy spell once for all its waiting steps.)
    ctx.logger.warn({ payment_id: p.id, step_errors: stepErrors, err: e.message }, "payment step failed; will retry");
  }
  return { kind: "retry", inMs: backoffMs(policy, stepErrors), stepErrors };
}

function shortMessage(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string } | null;
  const text = String(e?.shortMessage ?? e?.message ?? err);
  return text.length > 300 ? `${text.slice(0, 300)}…` : text;
}
