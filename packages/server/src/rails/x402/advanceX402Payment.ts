/**
 * The x402 payment's state machine after the hold, shared by the paying request, the dispatcher and
 * the worker.
 * A signed authorization can be settled by whoever holds it until `validBefore`, whatever the
 * merchant answered, so a payment without a confirmed settlement stays `processing` and is decided on
 * the chain: used → settled (with the transaction that used it), or provably unusable → failed and
 * credited back. Never both: the decision to fail needs a block past `validBefore` in which the
 * authorization is still unused, and `payments.resolve` changes an open payment at most once.
 * After settlement the fee moves from the project wallet to the treasury by a relayed EIP-3009
 * transfer (onchainLeg.ts), and the payment completes once that is confirmed: the fee is earned only
 * when the merchant was paid, as on the fiat rail.
 */
import type { Hex } from "viem";
import type { ProxiedResponse } from "@agentwallet/api";
import type { FailureCode } from "../../ledger/failureCodes.ts";
import type { Payment } from "../../domain/payment.ts";
import { type LegDeps, checkRelayed, relayTransfers } from "../onchainLeg.ts";
import type { AdvanceResult } from "../rails.ts";
import { authorizationStanding } from "./settlementOnChain.ts";
import { type X402SettledState, type X402SignedState, type X402State, x402States } from "./x402State.ts";

export type X402Deps = LegDeps & { onFinal?: (p: Payment, outcome: "completed" | "failed") => void };

/** What came back when the stored payload was sent again: the answer as the API shows it, and a settlement it proved. */
export type PayloadResent = { status: number; reply: ProxiedResponse; settlement: { txHash: Hex; state: X402SettledState } | undefined };

/** The rail's send of a payment's stored payload, byte for byte (x402Rail.ts); undefined when no answer came. */
type AdvanceDeps = X402Deps & { resendStored?: (payment: Payment, state: X402SignedState) => Promise<PayloadResent | undefined> };

/**
 * Times the worker sends a stored payload again, beyond the request's own resends (x402Rail.ts): a process
 * that restarted, or resends that all failed, still reach a merchant that keeps answers by payment-identifier.
 */
export const WORKER_RESENDS_MAX = 3;

/** How often an open authorization is looked at: cheap reads, bounded either way. */
const WATCH_INTERVAL_MS_MIN = 250;
const WATCH_INTERVAL_MS_MAX = 2_000;

/** One step of an open x402 payment, from its parsed state (rails.ts `advanceByStage`). */
export async function advanceX402Payment(d: AdvanceDeps, payment: Payment, state: X402State): Promise<AdvanceResult> {
  if (payment.status !== "pending" && payment.status !== "processing") return { done: true };
  switch (state.stage) {
    case "held":
      // The request stopped between the hold and the signature: nothing exists that could pay.
      await fail(d, payment, "x402_not_sent", "The request ended before the payment was signed; nothing was sent, the amount and fee were credited back.");
      return { done: true };
    case "signed":
      return watchAuthorization(d, payment, state);
    case "settled":
      return sweepFeeAndComplete(d, payment, state);
  }
}

async function watchAuthorization(d: AdvanceDeps, payment: Payment, state: X402SignedState): Promise<AdvanceResult> {
  const standing = await authorizationStanding(d.chain, state.authorization, {
    fromBlock: state.fromBlock ?? 0,
    confirmations: d.ctx.config.chain.paymentConfirmations,
    maxBlocksPerQuery: d.ctx.config.chain.depositScanMaxBlocks,
    nowMs: d.ctx.clock().getTime(),
  });
  if (standing.kind === "open") {
    if (mayResend(d, state, standing.secondsLeft)) return resendStored(d, payment, state);
    return { done: false, retryInMs: Math.min(WATCH_INTERVAL_MS_MAX, Math.max(WATCH_INTERVAL_MS_MIN, standing.secondsLeft * 1_000)) };
  }
  if (standing.kind === "expired") {
    await fail(d, payment, "x402_not_settled", "The merchant did not settle the signed authorization before it expired (validBefore passed on-chain); the amount and fee were credited back.");
    return { done: true };
  }
  // Used: the transaction is found by its event; a node that lags on logs gets another look.
  if (!standing.txHash) return { done: false, retryInMs: WATCH_INTERVAL_MS_MAX };
  const settled = settledState(state, standing.txHash, "chain");
  // Recorded: `tx_hash` is the merchant's settlement, never our fee sweep.
  const payment2 = await d.ctx.ledger.payments.updatePayment(payment.id, { txHash: standing.txHash, railState: x402States.write(state.stage, settled) });
  return sweepFeeAndComplete(d, payment2, settled);
}

/**
 * Only to a merchant that declared payment-identifier (it answers a payload it settled with its first answer,
 * and settles one it never got), only the payload stored before it first left (never a new signature), only
 * while the authorization is unused and valid, and at most WORKER_RESENDS_MAX times.
 */
function mayResend(d: AdvanceDeps, state: X402SignedState, secondsLeft: number): d is AdvanceDeps & Required<Pick<AdvanceDeps, "resendStored">> {
  return d.resendStored !== undefined && state.paymentIdentifier !== undefined && state.sent !== undefined && secondsLeft > 0 && (state.workerResends?.count ?? 0) < WORKER_RESENDS_MAX;
}

/**
 * Sends the stored payload once more: the count is written first (a crash mid-send never makes the bound
 * grow), then what came back: the answer as the payment's response, and a settlement it proves.
 */
async function resendStored(d: AdvanceDeps & Required<Pick<AdvanceDeps, "resendStored">>, payment: Payment, state: X402SignedState): Promise<AdvanceResult> {
  const counted: X402SignedState = { ...state, workerResends: { count: (state.workerResends?.count ?? 0) + 1, lastStatus: null } };
  await d.ctx.ledger.payments.updatePayment(payment.id, { railState: x402States.write(state.stage, counted) });
  const resent = await d.resendStored(payment, counted);
  if (!resent) return { done: false, retryInMs: WATCH_INTERVAL_MS_MAX };
  const answered: X402SignedState = { ...counted, workerResends: { ...counted.workerResends!, lastStatus: resent.status } };
  const responseJson = JSON.stringify(resent.reply);
  if (!resent.settlement) {
    await d.ctx.ledger.payments.updatePayment(payment.id, { responseJson, railState: x402States.write(state.stage, answered) });
    return { done: false, retryInMs: WATCH_INTERVAL_MS_MAX };
  }
  const settled: X402SettledState = { ...resent.settlement.state, workerResends: answered.workerResends };
  const payment2 = await d.ctx.ledger.payments.updatePayment(payment.id, { responseJson, txHash: resent.settlement.txHash, railState: x402States.write(state.stage, settled) });
  return sweepFeeAndComplete(d, payment2, settled);
}

export function settledState(state: X402SignedState, txHash: Hex, source: "receipt" | "chain", seen: { response?: string; receipt?: string; log?: { blockNumber: number; logIndex: number } } = {}): X402SettledState {
  return { ...state, stage: "settled", settlement: { txHash, source, ...seen } };
}

async function sweepFeeAndComplete(d: X402Deps, payment: Payment, state: X402SettledState): Promise<AdvanceResult> {
  if (payment.feeMicros > 0) {
    const sweep = state.feeSweep;
    if (!sweep) {
      await relayTransfers(d, payment, [{ to: d.chain.treasuryAddress, micros: payment.feeMicros }], (t) => ({
        railState: x402States.write(state.stage, { ...state, feeSweep: { hash: t.hash, transfers: t.auths } }),
      }));
      // A chain that mines at once confirms it now; otherwise the check below says when to look again.
      const relayed = (await d.ctx.ledger.payments.getPayment(payment.id))!;
      const next = x402States.read(relayed);
      if (next.stage !== "settled") throw new Error(`x402 payment ${payment.id} left the settled stage while its fee was swept`);
      return sweepFeeAndComplete(d, relayed, next);
    }
    const swept = await checkRelayed(d, payment, sweep.hash, sweep.transfers, (t) => ({
      railState: x402States.write(state.stage, { ...state, feeSweep: { ...sweep, hash: t.hash } }),
    }));
    if (swept === "pending") return { done: false, retryInMs: 500 };
    if (swept !== "confirmed") {
      // That sweep can no longer be mined and moved nothing: a fresh one is signed next time, after the
      // retry rule's growing delay (thrown so it counts: a sweep that keeps reverting must not spin).
      await d.ctx.ledger.payments.updatePayment(payment.id, { railState: x402States.write(state.stage, { ...state, feeSweep: undefined }) });
      throw new Error(`the fee sweep ${swept} (transaction ${sweep.hash}); a fresh one is signed on the next try`);
    }
  }
  const r = await d.ctx.ledger.payments.resolve(payment.id, "completed", { txHash: state.settlement.txHash });
  if (r.changed) d.onFinal?.(r.payment, "completed");
  return { done: true };
}

async function fail(d: X402Deps, payment: Payment, code: FailureCode, reason: string): Promise<Payment> {
  const r = await d.ctx.ledger.payments.resolve(payment.id, "failed", { failureCode: code, failureReason: reason });
  if (r.changed) d.onFinal?.(r.payment, "failed");
  return r.payment;
}
