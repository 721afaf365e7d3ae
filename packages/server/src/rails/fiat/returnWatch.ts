/**
 * The return watch: a completed bank payment can still come back (an ACH return, up to 60 days for a
 * consumer account), and the provider's webhook saying so can be lost or never configured. One pass, run by
 * the settlement thread of whichever process holds the watch's lease (ledger/returnWatch.ts):
 *
 * - with a provider that lists its changed payouts (Bridge: `GET /v0/transfers?updated_after_ms=`), one page
 *   from the persisted cursor; each payout that names one of our payments is applied (a returned one is
 *   reversed through `payments.reverse`, an open one woken). A page that is not full holds every change since
 *   the cursor, which then moves to the newest change seen (less an overlap: a change in that same
 *   millisecond is read again, never missed). A full page may have left changes out (Bridge pages by creation
 *   time, and `updated_after_ms` excludes any other paging), so the cursor stays and a sweep starts;
 * - the sweep reads watched payments (completed within the return window) directly, least recently read
 *   first, a bounded number per pass; once every one was read after the sweep began, the cursor jumps to
 *   that moment. A provider without a list (the sandbox off-ramp) is only swept: each watched payment is
 *   read again once per recheck period.
 *
 * Every pass reads at most `batchMax` payouts of each kind; the reversal is idempotent, so two processes
 * reading the same payout, or a pass cut short by a crash, credit nothing twice (decisions.md, "Watching
 * completed bank payments for returns").
 */
import type { Payment } from "../../domain/payment.ts";
import type { RailDeps } from "../railDeps.ts";
import type { FiatProvider, Payout } from "./provider.ts";

/** The cursor stays this far behind the newest change read, so changes within that millisecond are not lost. */
const CURSOR_OVERLAP_MS = 1_000;
/** A sweep covers changes from this long before it began: the provider's clock may run ahead of ours. */
const CLOCK_SKEW_MS = 5 * 60_000;
/** A pass holds the watch this long at most; it stops reading at half of it, so the lease never runs out under it. */
const LEASE_MS = 10 * 60_000;

export type ReturnWatchRail = {
  provider: FiatProvider;
  applyProviderState(payment: Payment, payout: Payout | undefined, wake: () => void): Promise<"woken" | "reversed" | "unchanged">;
};

export type ReturnWatchPass = { leased: boolean; listed: number; read: number; reversed: number; sweeping: boolean };

export async function watchReturns(ctx: RailDeps, rail: ReturnWatchRail, wake: () => void): Promise<ReturnWatchPass> {
  const w = ctx.config.fiat.returnWatch;
  const { provider } = rail;
  const store = ctx.ledger.returnWatch;
  const state = await store.claim(provider.name, ctx.instanceId, LEASE_MS);
  if (!state) return { leased: false, listed: 0, read: 0, reversed: 0, sweeping: false };
  const startedMs = ctx.clock().getTime();
  const inTime = () => ctx.clock().getTime() - startedMs < LEASE_MS / 2;
  let cursor = state.cursor_ms ?? startedMs - w.windowMs;
  let sweepFrom = state.sweep_from;
  const out: ReturnWatchPass = { leased: true, listed: 0, read: 0, reversed: 0, sweeping: false };
  const apply = async (payment: Payment | undefined, payout: Payout | undefined) => {
    if (payment && (await rail.applyProviderState(payment, payout, wake)) === "reversed") {
      out.reversed++;
      ctx.logger.warn({ payment_id: payment.id, provider: provider.name, reason: payout?.reason }, "bank payment returned after completion; reversed");
    }
  };
  try {
    if (provider.changedSince) {
      const page = await provider.changedSince(cursor, w.batchMax);
      out.listed = page.length;
      for (const payout of page) {
        if (!inTime()) throw new Error(`return watch pass stopped after ${LEASE_MS / 2} ms; the cursor stays`);
        await apply(await ctx.ledger.payments.paymentByProviderRef(payout.payoutId), payout);
      }
      if (page.length < w.batchMax) {
        const newest = Math.max(0, ...page.map((p) => p.updatedAtMs ?? 0));
        cursor = Math.max(cursor, newest - CURSOR_OVERLAP_MS);
        sweepFrom = null;
      } else sweepFrom ??= new Date(startedMs - CLOCK_SKEW_MS).toISOString();
    } else sweepFrom = new Date(startedMs - w.recheckMs).toISOString();

    if (sweepFrom) {
      out.sweeping = true;
      const due = await store.due({ since: new Date(startedMs - w.windowMs).toISOString(), before: sweepFrom, limit: w.batchMax });
      const read: string[] = [];
      for (const watched of due) {
        if (!inTime()) break;
        await apply(await ctx.ledger.payments.getPayment(watched.id), await provider.getPayout(watched.provider_ref));
        read.push(watched.id);
      }
      await store.markRead(read);
      out.read = read.length;
      // Every watched payment was read after the sweep began: the list is complete from that moment on.
      if (provider.changedSince && due.length < w.batchMax && read.length === due.length) {
        cursor = Math.max(cursor, Date.parse(sweepFrom));
        sweepFrom = null;
      }
    }
  } finally {
    await store.release(provider.name, ctx.instanceId, { cursor_ms: cursor, sweep_from: provider.changedSince ? sweepFrom : null });
  }
  return out;
}
