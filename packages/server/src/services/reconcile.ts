/**
 * Compares every project's wallet on-chain with the ledger (DESIGN §5: the chain is the proof). `held` is
 * the amount + fee of open payments, whose money may or may not have left the wallet yet. So:
 *   - nothing in flight (no open payment, no unconfirmed deposit): on-chain = available + held, to the unit;
 *   - otherwise each open payment may or may not have left the wallet yet, and each unconfirmed deposit
 *     may or may not stay: available <= on-chain <= available + held + pending.
 * A project without a wallet holds nothing on-chain, so its ledger must hold nothing either.
 * Anything outside is drift, and the report is not ok. So is a completed payment whose relayed transfer
 * is not on the chain at the confirmation depth (`lostLegs`, rails/lostLegs.ts), whatever the balances say.
 */
import type { Address } from "viem";
import type { BalanceStore } from "../ledger/ports.ts";
import type { LostLeg } from "../rails/lostLegs.ts";

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

export type ReconcileReport = { ok: boolean; checked: number; drifted: number; rows: ReconcileRow[]; lost_legs: LostLeg[] };

export async function reconcile(ledger: { balances: Pick<BalanceStore, "ofWallets"> }, balanceOf: (a: Address) => Promise<bigint>, lostLegs?: () => Promise<LostLeg[]>): Promise<ReconcileReport> {
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
  return { ok: drifted === 0 && lost.length === 0, checked: rows.length, drifted, rows, lost_legs: lost };
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
  lines.push(
    report.ok
      ? `Reconciled: ${report.checked} project(s) checked, every wallet matches the ledger.`
      : `Drift found: ${report.drifted} of ${report.checked} project(s) do not match the ledger (figures in micro-USDC; negative drift: the ledger shows more than the wallet holds).`,
  );
  return lines.join("\n");
}
