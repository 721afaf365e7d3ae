/**
 * `verify-ledger`: recomputes every balance from the journal and checks the invariants of
 * DESIGN §4. Returns the list of problems; an empty list means the ledger is consistent.
 */
import { sql } from "kysely";
import type { Db } from "./db.ts";
import { account } from "./store.ts";

export type LedgerProblem = { check: string; detail: string };

export async function verifyLedger(db: Db): Promise<{ ok: boolean; problems: LedgerProblem[]; projects: number; entries: number }> {
  const problems: LedgerProblem[] = [];
  const total = await db
    .selectFrom("journal_entries")
    .select([sql<number>`cast(coalesce(sum(amount_micros), 0) as bigint)`.as("sum"), sql<number>`count(*)`.as("n")])
    .executeTakeFirstOrThrow();
  if (Number(total.sum) !== 0) problems.push({ check: "journal_sums_to_zero", detail: `journal sums to ${total.sum}` });

  const unbalanced = await db
    .selectFrom("journal_entries")
    .select(["movement_id", sql<number>`cast(sum(amount_micros) as bigint)`.as("sum")])
    .groupBy("movement_id")
    .having(sql`sum(amount_micros)`, "!=", 0)
    .limit(20)
    .execute();
  for (const m of unbalanced) problems.push({ check: "movement_sums_to_zero", detail: `movement ${m.movement_id} sums to ${m.sum}` });

  const byAccount = new Map<string, number>();
  const sums = await db
    .selectFrom("journal_entries")
    .select(["account", sql<number>`cast(sum(amount_micros) as bigint)`.as("sum")])
    .groupBy("account")
    .execute();
  for (const s of sums) byAccount.set(s.account, Number(s.sum));

  const balances = await db.selectFrom("balances").selectAll().execute();
  for (const b of balances) {
    const p = b.project_id;
    const available = byAccount.get(account.available(p)) ?? 0;
    const held = byAccount.get(account.held(p)) ?? 0;
    if (available !== b.available_micros) problems.push({ check: "available_matches_journal", detail: `project ${p}: balance row ${b.available_micros}, journal ${available}` });
    if (held !== b.held_micros) problems.push({ check: "held_matches_journal", detail: `project ${p}: balance row held ${b.held_micros}, journal ${held}` });
    if (b.available_micros < 0 || b.held_micros < 0) problems.push({ check: "non_negative", detail: `project ${p}: available ${b.available_micros}, held ${b.held_micros}` });
  }

  // Derived figures: transaction count, funding, spending and pending deposits.
  const counts = await db
    .selectFrom("transactions")
    .select(["project_id", sql<number>`count(*)`.as("n"), sql<number>`count(distinct pos)`.as("positions"), sql<number>`min(pos)`.as("lo"), sql<number>`max(pos)`.as("hi")])
    .groupBy("project_id")
    .execute();
  // Positions are exactly 1..N per project: the list's pages depend on it.
  for (const c of counts) {
    const n = Number(c.n);
    if (Number(c.positions) !== n || (n > 0 && (Number(c.lo) !== 1 || Number(c.hi) !== n))) {
      problems.push({ check: "positions_contiguous", detail: `project ${c.project_id}: ${n} transactions, ${c.positions} distinct positions from ${c.lo} to ${c.hi}` });
    }
  }
  const countBy = new Map(counts.map((c) => [c.project_id, Number(c.n)]));
  // Sum of a money column per project over the rows in the given statuses.
  const sumBy = async (table: "deposits" | "payments", column: "amount_micros" | "amount_micros + fee_micros", op: "in" | "not in", statuses: string[]) => {
    const rows = await db
      .selectFrom(table)
      .select(["project_id", sql<number>`cast(sum(${sql.raw(column)}) as bigint)`.as("s")])
      .where("status", op, statuses as never)
      .groupBy("project_id")
      .execute();
    return new Map(rows.map((r) => [r.project_id, Number(r.s)]));
  };
  const fundedBy = await sumBy("deposits", "amount_micros", "in", ["credited"]);
  const pendingBy = await sumBy("deposits", "amount_micros", "in", ["seen"]);
  const spentBy = await sumBy("payments", "amount_micros + fee_micros", "not in", ["failed", "reversed"]);
  const openBy = await sumBy("payments", "amount_micros + fee_micros", "in", ["pending", "processing"]);
  for (const b of balances) {
    const p = b.project_id;
    const expect = (check: string, row: number, derived: number) => {
      if (row !== derived) problems.push({ check, detail: `project ${p}: balance row ${row}, derived ${derived}` });
    };
    expect("tx_count_matches", b.tx_count, countBy.get(p) ?? 0);
    expect("total_funded_matches_deposits", b.total_funded_micros, fundedBy.get(p) ?? 0);
    expect("pending_matches_unconfirmed_deposits", b.pending_micros, pendingBy.get(p) ?? 0);
    expect("total_spent_matches_payments", b.total_spent_micros, spentBy.get(p) ?? 0);
    expect("held_matches_open_payments", b.held_micros, openBy.get(p) ?? 0);
  }
  return { ok: problems.length === 0, problems, projects: balances.length, entries: Number(total.n) };
}
