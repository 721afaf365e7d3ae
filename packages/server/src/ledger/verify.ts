/**
 * `verify-ledger`: recomputes every balance from the journal and checks the invariants of
 * DESIGN §4. Returns the list of problems; an empty list means the ledger is consistent.
 */
import { PostgresAdapter, sql } from "kysely";
import type { Db } from "./db.ts";
import { account } from "./accounts.ts";

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
  // SQLite: the per-day counts kept by triggers (migration 0008) equal the rows they count; a filtered
  // list's total_count reads them.
  // PostgreSQL has no such table: it counts the rows when asked.
  // Decided by dialect, not by introspection: listing tables reads every schema in the database, and
  // one being dropped meanwhile (by another tenant or test) fails the listing.
  const kept = !(db.getExecutor().adapter instanceof PostgresAdapter);
  const counters = kept
    ? await sql<{ project_id: string; day: string; type: string; status: string; kept: number | null; actual: number | null }>`
        select coalesce(c.project_id, t.project_id) as project_id, coalesce(c.day, t.day) as day, coalesce(c.type, t.type) as type,
          coalesce(c.status, t.status) as status, c.n as kept, t.n as actual
        from (select project_id, substr(created_at, 1, 10) as day, type, status, count(*) as n from transactions group by 1, 2, 3, 4) t
        full outer join transaction_counts c on c.project_id = t.project_id and c.day = t.day and c.type = t.type and c.status = t.status
        where coalesce(c.n, 0) <> coalesce(t.n, 0)
        limit 20`.execute(db)
    : { rows: [] };
  for (const c of counters.rows) {
    problems.push({ check: "transaction_counts_match", detail: `project ${c.project_id}, ${c.day}, ${c.type}/${c.status}: counted ${c.kept ?? 0}, rows ${c.actual ?? 0}` });
  }
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
  // A return keeps the fee (its transaction stays `completed`), so a reversed payment's fee is still spent.
  // Returns recorded before that rule refunded the fee too and marked its transaction `reversed`.
  const keptFees = await db
    .selectFrom("payments")
    .innerJoin("transactions", "transactions.id", "payments.fee_txn_id")
    .select(["payments.project_id", sql<number>`cast(sum(payments.fee_micros) as bigint)`.as("s")])
    .where("payments.status", "=", "reversed")
    .where("transactions.status", "!=", "reversed")
    .groupBy("payments.project_id")
    .execute();
  for (const k of keptFees) spentBy.set(k.project_id, (spentBy.get(k.project_id) ?? 0) + Number(k.s));
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
