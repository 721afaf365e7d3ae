/**
 * fiat rail: the amount in USDC goes on-chain to the off-ramp's deposit address, then the provider
 * pays USD by ACH. The platform fee is swept to the treasury only once the payout completed, so a
 * failed payout (refunded on-chain by the provider) leaves nothing of the project's elsewhere.
 * Outcomes arrive by the provider's webhook (a hint, checked with the provider) or by polling.
 * A payout returned after completion (ACH return) moves the payment to `reversed`: the amount is credited
 * back, the fee stays earned (it is in the treasury, and the off-ramp refunds only the amount).
 */
import { forgetBankAccount, openBankRecipient } from "../../domain/bankAccount.ts";
import type { Address, Hex } from "viem";
import type { Payment } from "../../domain/payment.ts";
import { type FiatProvider, FiatProviderError, type Payout } from "./provider.ts";
import { type LegDeps, checkLeg, checkRelayed, legFailure, legLogs, relayTransfers, startLeg } from "../onchainLeg.ts";
import { type AdvanceResult, type Rail, advanceByStage } from "../rails.ts";
import type { FailureCode } from "../../ledger/failureCodes.ts";
import { type FiatPaidOutState, type FiatState, REPORTED_MAX, fiatStates, seenPaidOut } from "./fiatState.ts";

export function createFiatRail(d: LegDeps & { provider: FiatProvider; onFinal?: (p: Payment, outcome: "completed" | "failed" | "reversed") => void }) {
  const { ctx, provider } = d;
  const pollMs = provider.pollIntervalMs ?? 1_000;

  async function fail(payment: Payment, code: FailureCode, reason: string): Promise<AdvanceResult> {
    const r = await ctx.ledger.payments.resolve(payment.id, "failed", { failureCode: code, failureReason: reason.slice(0, 500) });
    if (r.changed) d.onFinal?.(r.payment, "failed");
    return { done: true };
  }

  /** The ledger notes where the USDC is while a refund is under way (the payment's failure_reason). */
  async function noteWhere(payment: Payment, payout: Payout): Promise<void> {
    if (payout.note && payout.note !== payment.failureReason) await ctx.ledger.payments.updatePayment(payment.id, { failureReason: payout.note.slice(0, 500) });
  }

  /**
   * `payout_first` (Bridge): the payout is created first (its deposit address and amount persisted
   * before anything is signed), then exactly that USDC goes on-chain, then the payout's state decides.
   */
  async function advancePayoutFirst(payment: Payment, state: FiatState): Promise<AdvanceResult> {
    if (state.stage === "held") {
      const project = await ctx.ledger.projects.get(payment.projectId);
      let payout: Payout;
      try {
        payout = await provider.createPayout({
          reference: payment.id,
          amountCents: payment.amountUnits,
          recipient: openBankRecipient(ctx.bankAccountKey, payment.projectId, payment.recipientJson!),
          refundAddress: project!.wallet_address as Address,
        });
      } catch (err) {
        if (err instanceof FiatProviderError && err.kind === "refused") return fail(payment, "payout_refused", `${err.message}; nothing was sent, the amount and fee were credited back.`);
        // Unavailable: the settlement retry rule backs off and, nothing being sent, bounds it (retries_exhausted).
        throw err;
      }
      // Invariant: sign for exactly the amount held, to the address the provider named, or nothing.
      if (!payout.deposit || payout.deposit.amountMicros !== payment.amountMicros) {
        return fail(payment, "payout_refused", `The off-ramp asked for ${payout.deposit ? `${payout.deposit.amountMicros} micro-USDC` : "no USDC deposit"} for a payout of ${payment.amountMicros}; nothing was sent`);
      }
      await ctx.ledger.payments.updatePayment(payment.id, {
        providerRef: payout.payoutId,
        railState: fiatStates.write(state.stage, { stage: "payout_created", deposit: payout.deposit }),
        // The provider holds the bank details now: keep only the last four digits of the account.
        recipientJson: forgetBankAccount(payment.recipientJson!),
      });
      return { done: false, retryInMs: 0 };
    }
    if (state.stage === "payout_created") {
      const { deposit } = state;
      await startLeg(d, payment, [{ to: deposit.address, micros: deposit.amountMicros }], (t) => fiatStates.write(state.stage, { stage: "usdc_leg", deposit, transfers: t.auths, relayNonce: t.nonce }));
      return { done: false, retryInMs: 250 };
    }
    if (state.stage === "usdc_leg") {
      const leg = await checkUsdcLeg(payment, state);
      if (leg === "pending") return { done: false, retryInMs: 500 };
      // Nothing moved: the transfer at the provider waits for funds that never come.
      if (leg !== "confirmed") {
        const f = await legFailure(d, payment, state.transfers, leg, "the off-ramp");
        return fail(payment, f.failureCode, f.failureReason);
      }
      const next: FiatPaidOutState = { ...state, stage: "payout", logs: await legLogs(d, payment.txHash as Hex, state.transfers) };
      payment = await ctx.ledger.payments.updatePayment(payment.id, { railState: fiatStates.write(state.stage, next) });
      return applyPayout(payment, next);
    }
    return applyPayout(payment, state);
  }

  /** Where the amount's leg to the off-ramp stands (sent again under a new nonce if the node lost it). */
  function checkUsdcLeg(payment: Payment, state: Extract<FiatState, { stage: "usdc_leg" }>) {
    return checkLeg(d, payment, state.transfers, (t) => fiatStates.write(state.stage, { ...state, relayNonce: t.nonce }));
  }

  /** A state of the payout the provider reports for the first time, kept with when, before it is acted on. */
  async function noteReported(payment: Payment, state: FiatPaidOutState, payout: Payout): Promise<{ payment: Payment; state: FiatPaidOutState }> {
    if (state.reported?.at(-1)?.status === payout.status) return { payment, state };
    const at = new Date(payout.updatedAtMs ?? ctx.clock().getTime()).toISOString();
    const next: FiatPaidOutState = { ...state, reported: [...(state.reported ?? []), { status: payout.status, at }].slice(-REPORTED_MAX) };
    return { payment: await ctx.ledger.payments.updatePayment(payment.id, { railState: fiatStates.write(state.stage, next) }), state: next };
  }

  async function applyPayout(payment: Payment, state: FiatPaidOutState): Promise<AdvanceResult> {
    const payout = await provider.getPayout(payment.providerRef!);
    if (payout) ({ payment, state } = await noteReported(payment, state, payout));
    if (!payout || payout.status === "processing") {
      if (payout) await noteWhere(payment, payout);
      return { done: false, retryInMs: pollMs };
    }
    // `refunded` before it was ever seen paid out: the USDC is back in the project wallet, so the hold
    // is released. Seen paid out before, it completes and is reversed below instead.
    const paidOutBefore = seenPaidOut(state);
    if (payout.status === "failed" || (payout.status === "refunded" && !paidOutBefore)) {
      if (payout.refundTxHash) await ctx.ledger.returnWatch.noteRefundTx(payment.id, payout.refundTxHash);
      return fail(payment, payout.refused ? "payout_refused" : "payout_failed", payout.reason ?? `The payout ${payout.refused ? "was refused by" : "failed at"} ${provider.name}; the amount and fee were credited back.`);
    }
    if (provider.flow === "payout_first" && !paidOutBefore) {
      // Remembered before anything else: a refund read later is then a return (reversed), never a failure.
      const next: FiatPaidOutState = { ...state, paidOut: true };
      payment = await ctx.ledger.payments.updatePayment(payment.id, { railState: fiatStates.write(state.stage, next) });
      state = next;
    }
    // completed or returned: the USD went out, so the fee is earned: sweep it to the treasury
    // (a relayed authorization of its own), and complete once that is confirmed on-chain.
    if (payment.feeMicros > 0) {
      const sweep = state.stage === "fee_sweep" ? state.feeSweep : undefined;
      if (!sweep) {
        await relayTransfers(d, payment, [{ to: d.chain.treasuryAddress, micros: payment.feeMicros }], (t) => ({
          railState: fiatStates.write(state.stage, { ...state, stage: "fee_sweep", feeSweep: { hash: t.hash, transfers: t.auths } }),
        }));
        return { done: false, retryInMs: 250 };
      }
      const swept = await checkRelayed(d, payment, sweep.hash, sweep.transfers, (t) => ({ railState: fiatStates.write(state.stage, { ...state, stage: "fee_sweep", feeSweep: { ...sweep, hash: t.hash } }) }));
      if (swept === "pending") return { done: false, retryInMs: 500 };
      if (swept !== "confirmed") {
        // The sweep can no longer be mined and moved nothing: sign a fresh one next time, after the
        // retry rule's growing delay (thrown so it counts: a sweep that keeps reverting must not spin).
        await ctx.ledger.payments.updatePayment(payment.id, { railState: fiatStates.write(state.stage, { ...state, stage: "fee_sweep", feeSweep: undefined }) });
        throw new Error(`the fee sweep ${swept} (transaction ${sweep.hash}); a fresh one is signed on the next try`);
      }
    }
    const r = await ctx.ledger.payments.resolve(payment.id, "completed");
    if (r.changed) d.onFinal?.(r.payment, "completed");
    // Asked again now that the payment is completed: a return that came after the read above was
    // announced by a webhook that, finding the payment still open, only woke this worker; the
    // answer read before the completion would lose it for good.
    const now = backWithUs(payout) ? payout : await provider.getPayout(payment.providerRef!);
    if (now && backWithUs(now)) await reverseReturned(r.payment, now);
    else if (payout.note) await noteWhere(r.payment, payout);
    return { done: true };
  }

  /** Credited back once the USDC is back with us: `returned` (sandbox) or `refunded` (Bridge). */
  const backWithUs = (x: Payout | undefined) => x?.status === "returned" || x?.status === "refunded";

  /** A completed payment whose payout came back: reversed through the ledger, once (amount back, fee kept). */
  async function reverseReturned(payment: Payment, payout: Payout): Promise<boolean> {
    if (payout.refundTxHash) await ctx.ledger.returnWatch.noteRefundTx(payment.id, payout.refundTxHash);
    const reversed = await ctx.ledger.payments.reverse(payment.id, payout.reason ?? "returned", "ach_returned");
    if (reversed) d.onFinal?.(payment, "reversed");
    return reversed;
  }

  /**
   * What the provider says of a payout now, applied to its payment when no lease is needed: an open one is
   * made due (the worker, holding its lease, reads and applies it); a completed one whose payout came back is
   * reversed; otherwise where its USDC is is noted. `wake` asks for a worker pass.
   */
  async function applyProviderState(payment: Payment, payout: Payout | undefined, wake: () => void): Promise<"woken" | "reversed" | "unchanged"> {
    if (payment.status === "processing") {
      await ctx.ledger.payments.makePaymentDue(payment.id, ctx.clock().toISOString());
      wake();
      return "woken";
    }
    if (payment.status !== "completed" || !payout) return "unchanged";
    if (backWithUs(payout)) return (await reverseReturned(payment, payout)) ? "reversed" : "unchanged";
    await noteWhere(payment, payout);
    return "unchanged";
  }

  const rail: Rail & {
    onProviderHint(payoutId: string, wake: () => void): Promise<void>;
    applyProviderState(payment: Payment, payout: Payout | undefined, wake: () => void): Promise<"woken" | "reversed" | "unchanged">;
    provider: FiatProvider;
  } = {
    provider,
    applyProviderState,
    advance: advanceByStage(fiatStates, async (payment, state) => {
      if (payment.status !== "pending" && payment.status !== "processing") return { done: true };
      if (provider.flow === "payout_first") return advancePayoutFirst(payment, state);
      if (state.stage === "held") {
        await startLeg(d, payment, [{ to: provider.depositAddress!, micros: payment.amountMicros }], (t) => fiatStates.write(state.stage, { stage: "usdc_leg", transfers: t.auths, relayNonce: t.nonce }));
        return { done: false, retryInMs: 250 };
      }
      if (state.stage === "payout_created") throw new Error(`payment ${payment.id}: a payout_first stage with a deposit_first off-ramp (${provider.name})`);
      if (state.stage === "usdc_leg") {
        const leg = await checkUsdcLeg(payment, state);
        if (leg === "pending") return { done: false, retryInMs: 500 };
        if (leg !== "confirmed") {
          const r = await ctx.ledger.payments.resolve(payment.id, "failed", await legFailure(d, payment, state.transfers, leg, "the off-ramp"));
          if (r.changed) d.onFinal?.(r.payment, "failed");
          return { done: true };
        }
        const project = await ctx.ledger.projects.get(payment.projectId);
        const payout = await provider.createPayout({
          reference: payment.id,
          amountCents: payment.amountUnits,
          recipient: openBankRecipient(ctx.bankAccountKey, payment.projectId, payment.recipientJson!),
          refundAddress: project!.wallet_address as Address,
        });
        // The provider holds the bank details now: keep only the last four digits of the account.
        await ctx.ledger.payments.updatePayment(payment.id, { providerRef: payout.payoutId, railState: fiatStates.write(state.stage, { ...state, stage: "payout", logs: await legLogs(d, payment.txHash as Hex, state.transfers) }), recipientJson: forgetBankAccount(payment.recipientJson!) });
        return { done: false, retryInMs: 1_000 };
      }
      return applyPayout(payment, state);
    }),
    /**
     * A provider webhook named this payout. An open payment is only woken up: the worker, holding its
     * lease, applies what the provider says (so no two processes ever sign for one payment). A return
     * after completion touches only the ledger, once, and is applied here.
     */
    async onProviderHint(payoutId, wake) {
      const payment = await ctx.ledger.payments.paymentByProviderRef(payoutId);
      if (!payment) return;
      await applyProviderState(payment, payment.status === "completed" ? await provider.getPayout(payoutId) : undefined, wake);
    },
  };
  return rail;
}
