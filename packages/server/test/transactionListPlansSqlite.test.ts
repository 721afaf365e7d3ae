// The plans SQLite chooses for every query GET /v1/transactions issues (transactionListPlans.test.ts holds
// PostgreSQL to the same), on 26,000 events seeded in SQL and, as the service runs it, no statistics: no read of
// `transactions` scans the table and nothing is sorted. A list filtered by creation time alone reads one range of
// `(project_id, created_at, pos)` in the page's order, and counts its edge days on that index too, as PostgreSQL
// does; with a type or status it merges one range per (type, status) pair, each read in the page's order.
import BetterSqlite from "better-sqlite3";
import { type CompiledQuery, Kysely, SqliteDialect, sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseListQuery } from "../src/http/listQuery.ts";
import { newId, systemClock } from "../src/ids.ts";
import type { Database } from "../src/ledger/schema.ts";
import { Ledger } from "../src/ledger/store.ts";
import { listTransactions } from "../src/services/listTransactions.ts";
import { type TestLedger, createTestLedger } from "./support/db.ts";
import { LIST_PAGES } from "./support/listPages.ts";

const EVENTS = 26_000;
const PROJECT = "prj_plans";

describe("plans of the transaction list on sqlite", () => {
  let t: TestLedger;
  let middle: { id: string; created_at: string };
  let early: string;

  beforeAll(async () => {
    t = await createTestLedger("sqlite");
    await sql`insert into projects (id, name, plan, wallet_index, created_at) values (${PROJECT}, 'plans', 'business', 1, '2025-01-01T00:00:00.000Z')`.execute(t.db);
    // The bench's mix (transactionListPlans.test.ts): 8 % deposits (one row), payments as a fee row and a rail row.
    await sql`
      insert into transactions (id, project_id, payment_id, type, status, amount, currency, created_at, pos)
      select 'txn_' || g || '_' || k, ${PROJECT}, case when r1 >= 0.08 then 'txn_' || g || '_1' end,
        case when r1 < 0.08 then 'usdc_fund' when k = 0 then 'platform_fee' when r1 < 0.68 then 'x402_payment' when r1 < 0.85 then 'usdc_transfer' else 'payment' end,
        case when r1 < 0.08 then 'completed' when r2 < 0.05 then 'failed' when r1 >= 0.85 and r2 < 0.07 then 'reversed' else 'completed' end,
        1000, 'usdc', strftime('%Y-%m-%dT%H:%M:%S', '2025-01-01', '+' || (g * 40) || ' seconds') || '.000Z', row_number() over (order by g, k)
      from (with recursive s(g) as (select 1 union all select g + 1 from s where g < ${EVENTS})
            select g, (g * 7919 % 1000) / 1000.0 as r1, (g * 104729 % 997) / 997.0 as r2 from s) e
      cross join (select 0 as k union all select 1) ks
      where k = 1 or r1 >= 0.08`.execute(t.db);
    await sql`insert into balances (project_id, tx_count) select ${PROJECT}, count(*) from transactions`.execute(t.db);
    const n = Number((await sql<{ n: number }>`select count(*) as n from transactions`.execute(t.db)).rows[0]!.n);
    middle = (await sql<{ id: string; created_at: string }>`select id, created_at from transactions where pos = ${Math.floor(n / 2)}`.execute(t.db)).rows[0]!;
    early = (await sql<{ created_at: string }>`select created_at from transactions where pos = ${Math.floor(n / 10)}`.execute(t.db)).rows[0]!.created_at;
  }, 60_000);
  afterAll(() => t?.drop());


  /** The list through the service over a connection that records its statements; each statement reading transactions, with its plan. */
  async function listWithPlans(query: Record<string, string>) {
    const issued: CompiledQuery[] = [];
    const traced = new Kysely<Database>({ dialect: new SqliteDialect({ database: new BetterSqlite(t.sqlitePath!) }), log: (e) => void (e.level === "query" && issued.push(e.query)) });
    const ledger = new Ledger(traced, "sqlite", systemClock, newId);
    const { startingAfter, ...q } = parseListQuery({ limit: "50", ...query });
    try {
      const cursor = startingAfter === undefined ? undefined : await ledger.transactions.cursorOf(PROJECT, startingAfter);
      issued.length = 0;
      const list = await listTransactions({ ledger }, PROJECT, { ...q, ...(cursor ? { cursor } : {}) });
      const raw = new BetterSqlite(t.sqlitePath!, { readonly: true });
      try {
        const statements = issued.filter((s) => /\btransactions\b/.test(s.sql)).map((s) => ({ sql: s.sql, plan: (raw.prepare(`explain query plan ${s.sql}`).all(...(s.parameters as unknown[])) as { detail: string }[]).map((r) => r.detail) }));
        return { list, statements, timeRangeOnly: q.filter?.timeRangeOnly === true };
      } finally {
        raw.close();
      }
    } finally {
      await traced.destroy();
    }
  }

  test.each(LIST_PAGES)("%s: index ranges only", async (_name, query, none) => {
    const { list, statements, timeRangeOnly } = await listWithPlans(query({ middle, early }));
    expect(list.transactions.length > 0).toBe(!none);
    expect(statements.length).toBeGreaterThan(0);
    for (const s of statements) {
      // A scan of the table (or of its alias `t` in a page's row read) would read every row of every project.
      for (const line of s.plan) expect(line, s.sql).not.toMatch(/^SCAN (transactions|t)\b/);
      // A sort would read every key of every range before the page could be cut.
      for (const line of s.plan) expect(line, s.sql).not.toMatch(/TEMP B-TREE/);
      const reads = s.plan.filter((line) => /^SEARCH (transactions|t) /.test(line));
      expect(reads.length, s.sql).toBeGreaterThan(0);
      if (!timeRangeOnly) continue;
      // By time alone: every read of the keys and of the edge days is on (project_id, created_at, pos); the rows
      // themselves are then read by position.
      const byTime = reads.filter((line) => !/^SEARCH t USING INDEX transactions_project_pos \(project_id=\? AND pos=\?\)$/.test(line));
      for (const line of byTime) expect(line, s.sql).toMatch(/^SEARCH transactions USING COVERING INDEX transactions_project_created_pos \(project_id=\? AND created_at[<>]/);
    }
    if (timeRangeOnly) {
      const page = statements.find((s) => /order by created_at desc, pos desc limit/.test(s.sql));
      expect(page?.plan.filter((line) => line.startsWith("SEARCH transactions ")), page?.sql).toHaveLength(1);
    }
  });
});
