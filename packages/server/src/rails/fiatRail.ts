/**
 * fiat rail: the amount in USDC goes on-chain to the off-ramp's deposit address, then the provider
 * pays USD by ACH. The platform fee is swept to the treasury only once the payout completed, so a
 * failed payout (refunded on-chain by the provider) leaves nothing of the project's elsewhere.
 * Outcomes arrive by the provider's webhook (a hint, checked with the provider) or by polling.
 * A payout returned after completion (ACH return) moves the payment to `reversed`, credited back.
 */
import type { BankRecipient } from "@agentwallet/api";
import type { Address } from "viem";
import type { PaymentRow } from "../ledger/store.ts";
import type { FiatProvider } from "./fiat/provider.ts";
import type { Hex } from "viem";
import type { Authorization } from "./eip3009.ts";
import { type LegDeps, checkLeg, checkRelayed, legState, relayTransfers, startLeg } from "./onchainLeg.ts";
import type { AdvanceResult, Rail } from "./rails.ts";

export function createFiatRail(d: LegDeps & { provider: FiatProvider; onFinal?: (p: PaymentRow, outcome: "completed" | "failed" | "reversed") => void }) {
  const { ctx, provider } = d;

  async function applyPayout(payment: PaymentRow): Promise<AdvanceResult> {
    const payout = await provider.getPayout(payment.provider_ref!);
    if (!payout || payout.status === "processing") return { done: false, retryInMs: 1_000 };
    if (payout.status === "failed") {
      const r = await ctx.ledger.resolve(payment.id, "failed", { failureReason: payout.reason });
      if (r.changed) d.onFinal?.(r.payment, "failed");
      return { done: true };
    }
    // completed or returned: the USD went out, so the fee is earned: sweep it to the treasury
    // (a relayed authorization of its own), and complete once that is confirmed on-chain.
    if (payment.fee_micros > 0) {
      const state = legState(payment)!;
      const sweep = state.feeSweep as { hash: Hex; transfers: Authorization[] } | undefined;
      if (!sweep) {
        await relayTransfers(d, payment, [{ to: d.chain.treasuryAddress, micros: payment.fee_micros }], (t) => ({
          rail_state: JSON.stringify({ ...state, stage: "fee_sweep", feeSweep: { hash: t.hash, transfers: t.auths } }),
        }));
        return { done: false, retryInMs: 250 };
      }
      const swept = await checkRelayed(d, payment, sweep.hash, sweep.transfers, (t) => ({ rail_state: JSON.stringify({ ...state, feeSweep: { ...sweep, hash: t.hash } }) }));
      if (swept === "pending") return { done: false, retryInMs: 500 };
      if (swept !== "confirmed") {
        // The sweep can no longer be mined and moved nothing: sign a fresh one next time.
        await ctx.ledger.updatePayment(payment.id, { rail_state: JSON.stringify({ ...state, feeSweep: undefined }) });
        return { done: false, retryInMs: 250 };
      }
    }
    const r = await ctx.ledger.resolve(payment.id, "completed");
    if (r.changed) d.onFinal?.(r.payment, "completed");
    if (payout.status === "returned" && (await ctx.ledger.reverse(payment.id, payout.reason ?? "returned"))) {
      d.onFinal?.(payment, "reversed");
    }
    return { done: true };
  }

  const rail: Rail & { onProviderHint(payoutId: string, wake: () => void): Promise<void> } = {
    async advance(payment) {
      if (payment.status === "pending" && !payment.tx_hash) {
        await startLeg(d, payment, [{ to: provider.depositAddress, micros: payment.amount_micros }], { stage: "usdc_leg" });
        return { done: false, retryInMs: 250 };
      }
      if (payment.status !== "processing") return { done: true };
      if (!payment.provider_ref) {
        const leg = await checkLeg(d, payment);
        if (leg === "pending") return { done: false, retryInMs: 500 };
        if (leg !== "confirmed") {
          const r = await ctx.ledger.resolve(payment.id, "failed", { failureReason: `on-chain transfer to the off-ramp ${leg}` });
          if (r.changed) d.onFinal?.(r.payment, "failed");
          return { done: true };
        }
        const project = await ctx.ledger.getProject(payment.project_id);
        const payout = await provider.createPayout({
          reference: payment.id,
          amountCents: payment.amount_units,
          recipient: JSON.parse(payment.recipient_json!) as BankRecipient,
          refundAddress: project!.wallet_address as Address,
        });
        const state = legState(payment)!;
        await ctx.ledger.updatePayment(payment.id, { provider_ref: payout.payoutId, rail_state: JSON.stringify({ ...state, stage: "payout" }) });
        return { done: false, retryInMs: 1_000 };
      }
      return applyPayout(payment);
    },
    /**
     * A provider webhook named this payout. An open payment is only woken up: the worker, holding its
     * lease, applies what the provider says (so no two processes ever sign for one payment). A return
     * after completion touches only the ledger, once, and is applied here.
     */
    async onProviderHint(payoutId, wake) {
      const payment = await ctx.ledger.db.selectFrom("payments").selectAll().where("provider_ref", "=", payoutId).executeTakeFirst();
      if (!payment) return;
      if (payment.status === "processing") {
        await ctx.ledger.db.updateTable("payments").set({ next_attempt_at: ctx.clock().toISOString() }).where("id", "=", payment.id).execute();
        wake();
      } else if (payment.status === "completed") {
        const payout = await provider.getPayout(payoutId);
        if (payout?.status === "returned" && (await ctx.ledger.reverse(payment.id, payout.reason ?? "returned"))) d.onFinal?.(payment, "reversed");
      }
    },
  };
  return rail;
}
