// `approval` and `refund_tx_hash` are null on almost every payment, so their indexes hold only the rows that have one
// (migration 0044): a payment's writes never add an entry for a null. Every read of those columns still goes through
// its index, on both databases, and on PostgreSQL also in the generic plan a prepared statement may keep.
import BetterSqlite from "better-sqlite3";
import { type CompiledQuery, Kysely, PostgresDialect, SqliteDialect, sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { newId, systemClock } from "../src/ids.ts";
import type { Database } from "../src/ledger/schema.ts";
import { Ledger } from "../src/ledger/store.ts";
import { type TestLedger, createTestLedger, dialects } from "./support/db.ts";
import { explainGeneric, planNodes } from "./support/plans.ts";

const PROJECT = "prj_sparse";
const ROWS = 6_000;
// Every 300th payment waits for approval, every 301st was decided, every 500th was refunded by its off-ramp.
const AWAITING = Math.floor(ROWS / 300);

describe.each(dialects)("the sparse indexes of payments (%s)", (dialect) => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await createTestLedger(dialect);
    await sql`insert into projects (id, name, plan, wallet_index, created_at) values (${PROJECT}, 'sparse', 'business', 1, '2026-01-01T00:00:00.000Z')`.execute(t.db);
    const rows = sql.raw(
      dialect === "sqlite"
        ? `with recursive g(n) as (select 1 union all select n + 1 from g where n < ${ROWS}) select n, printf('%06d', n) as k, printf('2026-01-01T%02d:%02d:%02d.000Z', n / 3600, n / 60 % 60, n % 60) as at from g`
        : `select n, lpad(n::text, 6, '0') as k, to_char(timestamp '2026-01-01' + n * interval '1 second', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at from generate_series(1, ${ROWS}) n`,
    );
    await sql`insert into payments (id, project_id, rail, status, amount_units, fee_units, amount_micros, fee_micros, currency, recipient, fee_txn_id,
        next_attempt_at, created_at, updated_at, approval, approval_decided_at, refund_tx_hash)
      select 'pay_' || k, ${PROJECT}, 'fiat', case when n % 500 = 0 then 'reversed' when n % 300 = 0 then 'pending' else 'completed' end, 1000, 10, 1000, 10, 'usd', 'bank', 'txn_fee_' || k,
        at, at, at,
        case when n % 300 = 0 and n % 500 <> 0 then 'awaiting' when n % 301 = 0 then 'approved' end,
        case when n % 301 = 0 then at end,
        case when n % 500 = 0 then '0x' || k end
      from (${rows}) s`.execute(t.db);
    // The off-ramp's refunds seen on-chain: two matched by a reversed payment, one by none.
    await sql`insert into provider_refunds (chain, tx_hash, log_index, project_id, from_address, amount_micros, block_number, seen_at) values
      ('base', '0x000500', 0, ${PROJECT}, '0xbridge', 1010, 1, '2026-02-01T00:00:00.000Z'),
      ('base', '0x001000', 0, ${PROJECT}, '0xbridge', 1010, 2, '2026-02-01T00:00:01.000Z'),
      ('base', '0x999999', 0, ${PROJECT}, '0xbridge', 1010, 3, '2026-02-01T00:00:02.000Z')`.execute(t.db);
    await sql.raw(dialect === "sqlite" ? "analyze" : "vacuum analyze payments").execute(t.db);
  }, 60_000);
  afterAll(() => t?.drop());

  /** Runs `read` on a ledger over a connection that records its statements; answers the plan of each that reads payments. */
  async function plansOf(read: (ledger: Ledger) => Promise<unknown>): Promise<{ result: unknown; plans: string[] }> {
    const issued: CompiledQuery[] = [];
    const log = (e: { level: string; query: CompiledQuery }) => void (e.level === "query" && issued.push(e.query));
    const traced =
      dialect === "sqlite"
        ? new Kysely<Database>({ dialect: new SqliteDialect({ database: new BetterSqlite(t.sqlitePath!) }), log })
        : new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: t.url, max: 1 }) }), log });
    let result: unknown;
    try {
      result = await read(new Ledger(traced, dialect, systemClock, newId));
    } finally {
      await traced.destroy();
    }
    const plans: string[] = [];
    for (const q of issued.filter((s) => /"payments"/.test(s.sql))) {
      if (dialect === "sqlite") {
        const raw = new BetterSqlite(t.sqlitePath!, { readonly: true });
        try {
          plans.push((raw.prepare(`explain query plan ${q.sql}`).all(...(q.parameters as unknown[])) as { detail: string }[]).map((r) => r.detail).join("; "));
        } finally {
          raw.close();
        }
      } else {
        const pool = new pg.Pool({ connectionString: t.url, max: 1 });
        try {
          const nodes = planNodes(await explainGeneric(pool, q)).map(({ node }) => `${node["Node Type"]} ${node["Relation Name"] ?? ""} ${node["Index Name"] ?? ""}`);
          plans.push(nodes.join("; "));
        } finally {
          await pool.end();
        }
      }
    }
    return { result, plans };
  }

  test("structure: each index holds only the payments that have a value", async () => {
    const defs =
      dialect === "sqlite"
        ? ((await sql<{ d: string }>`select sql as d from sqlite_master where type = 'index' and name in ('payments_approval', 'payments_refund_tx') order by name`.execute(t.db)).rows)
        : ((await sql<{ d: string }>`select indexdef as d from pg_indexes where schemaname = current_schema() and indexname in ('payments_approval', 'payments_refund_tx') order by indexname`.execute(t.db)).rows);
    expect(defs.map((r) => r.d.replaceAll('"', "").replace(/[()]/g, "").toLowerCase())).toEqual([
      expect.stringMatching(/on .*payments .*approval, project_id.* where approval is not null$/),
      expect.stringMatching(/on .*payments .*refund_tx_hash.* where refund_tx_hash is not null$/),
    ]);
  });

  test("behavior: awaiting and decided approvals are found through the approval index", async () => {
    const awaiting = await plansOf((ledger) => ledger.payments.listAwaitingApprovals({ projectId: PROJECT, limit: 50 }));
    expect((awaiting.result as unknown[]).length).toBe(AWAITING - Math.floor(ROWS / 1500));
    const decided = await plansOf((ledger) => ledger.payments.listDecidedApprovals(PROJECT, 50));
    expect((decided.result as unknown[]).length).toBe(Math.floor(ROWS / 301));
    for (const plans of [awaiting.plans, decided.plans]) {
      expect(plans).toHaveLength(1);
      expect(plans[0]).toMatch(dialect === "sqlite" ? /USING INDEX payments_approval/ : /Index Scan (payments )?\s*payments_approval/);
      expect(plans[0]).not.toMatch(dialect === "sqlite" ? /SCAN payments(?! USING)/ : /Seq Scan payments/);
    }
  });

  test("behavior: a refund seen on-chain is matched to its payment through the refund index", async () => {
    const unmatched = await plansOf((ledger) => ledger.returnWatch.unmatchedRefunds(50));
    expect((unmatched.result as { tx_hash: string }[]).map((r) => r.tx_hash)).toEqual(["0x999999"]);
    expect(unmatched.plans).toHaveLength(1);
    expect(unmatched.plans[0]).toMatch(dialect === "sqlite" ? /USING INDEX payments_refund_tx/ : /Index Scan (payments )?\s*payments_refund_tx/);
    expect(unmatched.plans[0]).not.toMatch(dialect === "sqlite" ? /SCAN p(?! USING)/ : /Seq Scan payments/);
  });
});
