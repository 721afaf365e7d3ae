/**
 * usdc_transfer rail: amount to the recipient and fee to the treasury, both by EIP-3009 from the
 * project wallet, in one relayed transaction. Completed when the receipt is confirmed; failed (and
 * credited back) if it reverts or can no longer be mined.
 */
import type { Address } from "viem";
import type { PaymentRow } from "../../ledger/store.ts";
import { type LegDeps, checkLeg, legFailure, startLeg } from "../onchainLeg.ts";
import type { AdvanceResult, Rail } from "../rails.ts";

export function createUsdcRail(d: LegDeps & { onFinal?: (p: PaymentRow, outcome: "completed" | "failed") => void }): Rail {
  return {
    async advance(payment): Promise<AdvanceResult> {
      if (payment.status === "pending" && !payment.tx_hash) {
        await startLeg(d, payment, [
          { to: payment.recipient as Address, micros: payment.amount_micros },
          { to: d.chain.treasuryAddress, micros: payment.fee_micros },
        ]);
        return { done: false, retryInMs: 250 };
      }
      const status = await checkLeg(d, payment);
      if (status === "pending") return { done: false, retryInMs: 500 };
      const outcome = status === "confirmed" ? "completed" : "failed";
      const r = await d.ctx.ledger.resolve(payment.id, outcome, status === "confirmed" ? { failureReason: null } : await legFailure(d, payment, status, "the recipient"));
      if (r.changed) d.onFinal?.(r.payment, outcome);
      return { done: true };
    },
  };
}
