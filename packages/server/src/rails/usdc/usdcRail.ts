/**
 * usdc_transfer rail: amount to the recipient and fee to the treasury, both by EIP-3009 from the
 * project wallet, in one relayed transaction. Completed when the receipt is confirmed; failed (and
 * credited back) if it reverts or can no longer be mined. Its stages: usdcState.ts.
 */
import type { Address, Hex } from "viem";
import type { Payment } from "../../domain/payment.ts";
import { type LegDeps, type RelayedLeg, checkLeg, legFailure, legLogs, startLeg } from "../onchainLeg.ts";
import { type AdvanceResult, type Rail, advanceByStage } from "../rails.ts";
import { type UsdcState, usdcStates } from "./usdcState.ts";

export function createUsdcRail(d: LegDeps & { onFinal?: (p: Payment, outcome: "completed" | "failed") => void }): Rail {
  async function step(payment: Payment, state: UsdcState): Promise<AdvanceResult> {
    if (payment.status !== "pending" && payment.status !== "processing") return { done: true };
    if (state.stage === "held") {
      await startLeg(d, payment, [
        { to: payment.recipient as Address, micros: payment.amountMicros },
        { to: d.chain.treasuryAddress, micros: payment.feeMicros },
      ], (t) => relayedState("held", t));
      return { done: false, retryInMs: 250 };
    }
    const status = await checkLeg(d, payment, state.transfers, (t) => usdcStates.write("relayed", { ...state, relayNonce: t.nonce }));
    if (status === "pending") return { done: false, retryInMs: 500 };
    if (status !== "confirmed") {
      const r = await d.ctx.ledger.payments.resolve(payment.id, "failed", await legFailure(d, payment, state.transfers, status, "the recipient"));
      if (r.changed) d.onFinal?.(r.payment, "failed");
      return { done: true };
    }
    // Where the transfers are on-chain (the evidence of the completion): stored with it, by the same write.
    const logs = state.logs ?? (await legLogs(d, payment.txHash as Hex, state.transfers));
    const r = await d.ctx.ledger.payments.resolve(payment.id, "completed", { failureReason: null, railState: usdcStates.write("relayed", { ...state, logs }) });
    if (r.changed) d.onFinal?.(r.payment, "completed");
    return { done: true };
  }
  return { advance: advanceByStage(usdcStates, step) };
}

/** The stored state of a usdc_transfer payment whose leg was relayed (signed first, or again). */
export function relayedState(from: UsdcState["stage"], t: RelayedLeg): string {
  return usdcStates.write(from, { stage: "relayed", transfers: t.auths, relayNonce: t.nonce });
}
