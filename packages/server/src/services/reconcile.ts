/**
 * Compares every project's wallet on-chain with the ledger (DESIGN §5: the chain is the proof). `held` is
 * the amount + fee of open payments, whose money may or may not have left the wallet yet. So:
 *   - nothing in flight (no open payment, no unconfirmed deposit): on-chain = available + held, to the unit;
 *   - otherwise each open payment may or may not have left the wallet yet, and each unconfirmed deposit
 *     may or may not stay: available <= on-chain <= available + held + pending.
 * A project without a wallet holds nothing on-chain, so its ledger must hold nothing either.
 * Anything outside is drift, and the report is not ok. So is a completed payment whose relayed transfer
 * is not on the chain at the confirmation depth (`lostLegs`, settlement/lostLegs.ts), whatever the balances say,
 * and so is USDC an off-ramp sent back to a wallet that no failed or reversed payment names as its refund
 * (`unmatched_refunds`): never credited as a deposit, it is money the ledger cannot place until a person
 * looks (or the return watch reads the payout it belongs to).
 */
import type { Address } from "viem";
import type { BalanceStore, KvStore, ReturnWatchStore } from "../ledger/ports.ts";
import type { UnmatchedRefund } from "../ledger/returnWatch.ts";

/**
 * A completed payment's leg not on the chain at the confirmation depth (found by settlement/lostLegs.ts):
 * `missing`: not used at the latest block; `shallow`: used, but not yet as deep as a payment needs to complete.
 */
export type LostLeg = { payment_id: string; project_id: string; rail: string; leg: "transfer" | "fee_sweep"; tx_hash: string; state: "missing" | "shallow" };

export type ReconcileRow = {
  project_id: string;
  wallet: string | null;
  onchain_micros: number;
  available_micros: number;
  held_micros: number;
  pending_micros: number;
  open_payments: number;
  /** `exact` with nothing in flight; `range` while payments are open or deposits unconfirmed. */
  judged: "exact" | "range";
  expected_min_micros: number;
  expected_max_micros: number;
  /** On-chain minus the nearest expected figure: negative when the ledger shows more than the chain holds. */
  drift_micros: number;
  ok: boolean;
};

export type ReconcileReport = { ok: boolean; checked: number; drifted: number; rows: ReconcileRow[]; lost_legs: LostLeg[]; unmatched_refunds: UnmatchedRefund[] };

/** Unmatched refunds listed at most (the report says when there are more). */
export const UNMATCHED_REFUNDS_SHOWN_MAX = 1_000;

export async function reconcile(
  ledger: { balances: Pick<BalanceStore, "ofWallets">; returnWatch?: Pick<ReturnWatchStore, "unmatchedRefunds"> },
  balanceOf: (a: Address) => Promise<bigint>,
  lostLegs?: () => Promise<LostLeg[]>,
  /** Whether a refund's transaction is still on the chain (a rollback or reorg may have taken it away). */
  onChain?: (txHash: string) => Promise<boolean>,
): Promise<ReconcileReport> {
  const rows: ReconcileRow[] = [];
  for (const b of await ledger.balances.ofWallets()) {
    const onchain = b.wallet_address ? Number(await balanceOf(b.wallet_address as Address)) : 0;
    const openPayments = b.open_payments;
    const exact = openPayments === 0 && b.pending_micros === 0;
    const min = exact ? b.available_micros + b.held_micros : b.available_micros;
    const max = b.available_micros + b.held_micros + b.pending_micros;
    const drift = onchain < min ? onchain - min : onchain > max ? onchain - max : 0;
    rows.push({
      project_id: b.id,
      wallet: b.wallet_address,
      onchain_micros: onchain,
      available_micros: b.available_micros,
      held_micros: b.held_micros,
      pending_micros: b.pending_micros,
      open_payments: openPayments,
      judged: exact ? "exact" : "range",
      expected_min_micros: min,
      expected_max_micros: max,
      drift_micros: drift,
      ok: drift === 0,
    });
  }
  const drifted = rows.filter((r) => !r.ok).length;
  const lost = (await lostLegs?.()) ?? [];
  const refunds: UnmatchedRefund[] = [];
  for (const r of (await ledger.returnWatch?.unmatchedRefunds(UNMATCHED_REFUNDS_SHOWN_MAX)) ?? []) {
    if (!onChain || (await onChain(r.tx_hash))) refunds.push(r);
  }
  return { ok: drifted === 0 && lost.length === 0 && refunds.length === 0, checked: rows.length, drifted, rows, lost_legs: lost, unmatched_refunds: refunds };
}

/** The report as text: every figure of the JSON, one line per project, then a verdict. */
export function formatReconcile(report: ReconcileReport): string {
  const lines = report.rows.map((r) => {
    const expected = r.judged === "exact" ? `expected ${r.expected_min_micros} (exact)` : `expected ${r.expected_min_micros}..${r.expected_max_micros} (range: ${r.open_payments} open payments, ${r.pending_micros} pending)`;
    return [
      r.ok ? "ok   " : "DRIFT",
      r.project_id,
      `wallet ${r.wallet ?? "none"}`,
      `on-chain ${r.onchain_micros}`,
      `available ${r.available_micros}`,
      `held ${r.held_micros}`,
      `pending ${r.pending_micros}`,
      `open ${r.open_payments}`,
      expected,
      `drift ${r.drift_micros}`,
      `ok ${r.ok}`,
    ].join("  ");
  });
  for (const l of report.lost_legs) {
    lines.push(`LOST   ${l.payment_id}  project ${l.project_id}  ${l.rail} ${l.leg}  tx ${l.tx_hash}  ${l.state === "missing" ? "completed, but its transfer is not on the chain" : "completed, but its transfer is not yet confirmed"}`);
  }
  if (report.lost_legs.length) lines.push(`Completed payments not on the chain: ${report.lost_legs.length}.`);
  for (const r of report.unmatched_refunds) {
    lines.push(`REFUND ${r.tx_hash}:${r.log_index}  project ${r.project_id}  from ${r.from_address}  ${r.amount_micros} micro-USDC  block ${r.block_number}  matches no failed or returned payment; not credited`);
  }
  if (report.unmatched_refunds.length) lines.push(`Off-ramp refunds no payment accounts for: ${report.unmatched_refunds.length}${report.unmatched_refunds.length === UNMATCHED_REFUNDS_SHOWN_MAX ? " or more" : ""}.`);
  lines.push(
    report.ok
      ? `Reconciled: ${report.checked} project(s) checked, every wallet matches the ledger.`
      : report.drifted === 0
        ? `Not reconciled: ${report.checked} project(s) checked and every wallet matches the ledger, but the lines above need a look.`
        : `Drift found: ${report.drifted} of ${report.checked} project(s) do not match the ledger (figures in micro-USDC; negative drift: the ledger shows more than the wallet holds).`,
  );
  return lines.join("\n");
}

/** The last reconcile's outcome, as the drift metric reads it (kept in `kv` by `agentwallet reconcile`). */
export type ReconcileSummary = { at: string; ok: boolean; drifted: number; drift_micros: number; lost_legs: number };

const RECONCILE_LAST_KEY = "reconcile:last";

/** Keeps the report's summary as the last run's: the sum of each wallet's drift (its size, either way). */
export async function recordReconcile(kv: Pick<KvStore, "set">, report: ReconcileReport, at: Date): Promise<ReconcileSummary> {
  const summary: ReconcileSummary = { at: at.toISOString(), ok: report.ok, drifted: report.drifted, drift_micros: report.rows.reduce((sum, r) => sum + Math.abs(r.drift_micros), 0), lost_legs: report.lost_legs.length };
  await kv.set(RECONCILE_LAST_KEY, JSON.stringify(summary));
  return summary;
}

export async function lastReconcile(kv: Pick<KvStore, "get">): Promise<ReconcileSummary | undefined> {
  const v = await kv.get(RECONCILE_LAST_KEY);
  return v === undefined ? undefined : (JSON.parse(v) as ReconcileSummary);
}
