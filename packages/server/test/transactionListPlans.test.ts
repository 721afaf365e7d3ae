// The plans PostgreSQL chooses for every query GET /v1/transactions issues, at a size where the planner
// has a choice (50,000 rows over 12 days, seeded in SQL): every read of `transactions` is an index range
// that stops after a page (offset + limit + 1 entries) or, counting an edge day of a time range, after
// that day's rows. None counts the matching rows of the whole history.
import { Kysely, PostgresDialect, type CompiledQuery } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseListQuery } from "../src/http/listQuery.ts";
import { Balances } from "../src/ledger/balances.ts";
import type { PgDirect } from "../src/ledger/db.ts";
import type { Database } from "../src/ledger/schema.ts";
import { TransactionReads } from "../src/ledger/transactionReads.ts";
import { listTransactions } from "../src/services/listTransactions.ts";
import { createTestDb, type TestDb } from "./support/db.ts";
import { LIST_PAGES } from "./support/listPages.ts";
import { ConsoleTransactions, type ConsoleFilter, LISTED_TYPES } from "../src/ledger/consoleTransactions.ts";
import { type PlanNode, type TracedPostgres, explainGeneric, planNodes, tracedPostgres } from "./support/plans.ts";

const EVENTS = 26_000;
const PROJECT = "prj_plans";

describe("plans of the transaction list on postgres", () => {
  let db: TestDb;
  let pool: pg.Pool;
  let traced: Kysely<Database>;
  const issued: CompiledQuery[] = [];
  let middle: { id: string; created_at: string };
  let early: string;
  let maxDay: number;

  beforeAll(async () => {
    db = await createTestDb("postgres");
    pool = new pg.Pool({ connectionString: db.url, max: 2 });
    traced = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (e) => void (e.level === "query" && issued.push(e.query)) });
    const c = await pool.connect();
    try {
      await c.query(`insert into projects (id, name, plan, wallet_index, created_at) values ($1, 'plans', 'business', 1, '2025-01-01T00:00:00.000Z')`, [PROJECT]);
      // The bench's mix: 8 % deposits (one row), payments as a fee row and a rail row, mostly completed.
      await c.query(
        `insert into transactions (id, project_id, payment_id, type, status, amount, currency, created_at, pos)
         select 'txn_' || g || '_' || k, $1, case when r1 >= 0.08 then 'txn_' || g || '_1' end,
           case when r1 < 0.08 then 'usdc_fund' when k = 0 then 'platform_fee' when r1 < 0.68 then 'x402_payment' when r1 < 0.85 then 'usdc_transfer' else 'payment' end,
           case when r1 < 0.08 then 'completed' when r2 < 0.05 then 'failed' when r1 >= 0.85 and r2 < 0.07 then 'reversed' else 'completed' end,
           1000, 'usdc', to_char(timestamp '2025-01-01' + g * interval '40 seconds', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 2 * g + k
         from (select g, (g::bigint * 7919 % 1000) / 1000.0 as r1, (g::bigint * 104729 % 997) / 997.0 as r2 from generate_series(1, $2::int) g) e
         cross join generate_series(0, 1) k
         where k = 1 or r1 >= 0.08`,
        [PROJECT, EVENTS],
      );
      await c.query(`insert into balances (project_id, tx_count) select $1, count(*) from transactions`, [PROJECT]);
      await c.query(`update transactions set pos = r.rn from (select seq, row_number() over (order by created_at, seq) as rn from transactions) r where transactions.seq = r.seq`);
      await c.query(`vacuum analyze transactions`);
      await c.query(`analyze transaction_counts`);
      const n = Number((await c.query(`select count(*) as n from transactions`)).rows[0].n);
      middle = (await c.query(`select id, created_at from transactions where pos = $1`, [Math.floor(n / 2)])).rows[0];
      early = (await c.query(`select created_at from transactions where pos = $1`, [Math.floor(n / 10)])).rows[0].created_at;
      maxDay = Number((await c.query(`select max(n) as n from (select count(*) as n from transactions group by substr(created_at, 1, 10)) d`)).rows[0].n);
    } finally {
      c.release();
    }
  }, 120_000);
  afterAll(async () => {
    await traced?.destroy();
    await db?.drop();
  });


  test.each(LIST_PAGES)("%s: index ranges only, none past a page or a day", async (_name, query, none) => {
    const { startingAfter, ...q } = parseListQuery({ limit: "50", ...query({ middle, early }) });
    // Statements the store runs prepared (ledger/db.ts `pgDirectOf`): their generic plans are held to the same rule.
    const preparedTexts = new Set<string>();
    const direct: PgDirect = {
      prepared: async (_name, query) => {
        preparedTexts.add(query.sql);
        return (await traced.executeQuery(query)).rows;
      },
    };
    const reads = new TransactionReads(traced, "postgres", direct);
    const cursor = startingAfter === undefined ? undefined : await reads.cursorOf(PROJECT, startingAfter);
    issued.length = 0;
    preparedTexts.clear();
    const list = await listTransactions({ ledger: { balances: new Balances(traced, "postgres"), transactions: reads } }, PROJECT, { ...q, ...(cursor ? { cursor } : {}) });
    expect(list.transactions.length > 0).toBe(!none);
    const perRange = q.offset + q.limit + 1;
    let scans = 0;
    // Each statement's plan for its values, and its generic plan (a prepared statement may keep that one).
    const plans: { sql: string; plan: PlanNode }[] = [];
    for (const statement of issued.splice(0)) {
      const { rows } = await pool.query(`explain (analyze, format json) ${statement.sql}`, statement.parameters as unknown[]);
      plans.push({ sql: statement.sql, plan: (rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan });
      if (preparedTexts.has(statement.sql)) plans.push({ sql: `(generic) ${statement.sql}`, plan: await explainGeneric(pool, statement) });
    }
    for (const { sql: text, plan } of plans) {
      const statement = { sql: text };
      for (const { node, above } of planNodes(plan)) {
        if (node["Relation Name"] !== "transactions") continue;
        scans++;
        // A count (an aggregate above the scan) reads an edge day of a time range from its smaller side, at most
        // about half that day's rows (the rows are evenly spread: 5 % allows for the mix); a page, one page per range.
        const counting = above.includes("Aggregate");
        if (counting) expect(q.filter?.createdAfter ?? q.filter?.createdBefore, `a count without a time range: ${statement.sql}`).toBeDefined();
        const bound = counting ? Math.ceil((maxDay / 2) * 1.05) : perRange;
        // A page reads in order, so only an index scan stops after it. A count needs no order: the planner
        // may count an edge day through a bitmap of that day's index range instead (it does, depending on
        // the statistics), which is as bounded, so long as every index read under it is that range: both
        // ends of the time range in its index condition. (Its entry count is not the bound: it includes row
        // versions a vacuum has not removed yet, which another transaction of the server can keep for a while.)
        if (counting && node["Node Type"] === "Bitmap Heap Scan") {
          const under = planNodes(node).slice(1).map((n) => n.node);
          expect(under.length, statement.sql).toBeGreaterThan(0);
          for (const n of under) {
            expect(n["Node Type"], statement.sql).toMatch(/^(Bitmap Index Scan|BitmapAnd|BitmapOr)$/);
            if (n["Node Type"] === "Bitmap Index Scan") expect(n["Index Cond"], `${n["Index Name"]} in ${statement.sql}`).toMatch(/created_at >=? .*created_at <=? /);
          }
        } else {
          expect(node["Node Type"], statement.sql).toMatch(/^Index (Only )?Scan$/);
        }
        expect(node["Actual Rows"], `${node["Index Name"]} in ${statement.sql}`).toBeLessThanOrEqual(bound);
      }
    }
    expect(scans).toBeGreaterThan(0);
    // Every filtered or cursor page and filtered count of this list is prepared, but a time range's page (planned
    // per call); the plain page and the count of a cursor page are the balance store's (not prepared in this test).
    expect(preparedTexts.size, "statements run prepared").toBe(q.filter ? (q.filter.timeRangeOnly ? 1 : 2) : cursor ? 1 : 0);
  });
});

// The plans PostgreSQL chooses for the console list's pages (ledger/consoleTransactions.ts) at a size where
// the planner has a choice (26,000 events seeded in SQL, their payments made by three tokens): every read
// of `transactions` and `payments` is an index scan, and a page stops after its rows (limit + 1 per range),
// wherever in the history it starts.
// (In this file so that the two seeded schemas are never planned at once: run side by side as two files,
// PostgreSQL chose other scans for some of the cases above.)
const CONSOLE_EVENTS = 26_000;
const CONSOLE_PROJECT = "prj_console_plans";
const LIMIT = 50;


describe("plans of the console's transactions list on postgres", () => {
  let pg: TracedPostgres;
  let middle: { created_at: string; pos: number };

  beforeAll(async () => {
    pg = await tracedPostgres();
    const c = await pg.pool.connect();
    try {
      await c.query(`insert into projects (id, name, plan, wallet_index, created_at) values ($1, 'plans', 'business', 1, '2025-01-01T00:00:00.000Z')`, [CONSOLE_PROJECT]);
      // The bench's mix: 8 % deposits; payments as a fee row and a rail row at one instant.
      await c.query(
        `insert into transactions (id, project_id, payment_id, type, status, amount, currency, created_at, pos)
         select 'txn_' || g || '_' || k, $1, case when r1 >= 0.08 then 'txn_' || g || '_1' end,
           case when r1 < 0.08 then 'usdc_fund' when k = 0 then 'platform_fee' when r1 < 0.68 then 'x402_payment' when r1 < 0.85 then 'usdc_transfer' else 'payment' end,
           case when r2 < 0.05 then 'failed' else 'completed' end,
           1000 + g % 5000, 'usdc', to_char(timestamp '2025-01-01' + g * interval '40 seconds', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 2 * g + k
         from (select g, (g::bigint * 7919 % 1000) / 1000.0 as r1, (g::bigint * 104729 % 997) / 997.0 as r2 from generate_series(1, $2::int) g) e
         cross join generate_series(0, 1) k
         where k = 1 or r1 >= 0.08`,
        [CONSOLE_PROJECT, CONSOLE_EVENTS],
      );
      await c.query(`insert into api_tokens (id, project_id, token_hash, display_prefix, permissions, created_at, name, depth) values
        ('tok_a', $1, 'ha', 'aw_test_aaaa', 'read,pay,x402', '2025-01-01T00:00:00.000Z', 'a', 0),
        ('tok_b', $1, 'hb', 'aw_test_bbbb', 'read,pay,x402', '2025-01-01T00:00:00.000Z', 'b', 1),
        ('tok_c', $1, 'hc', 'aw_test_cccc', 'read,pay,x402', '2025-01-01T00:00:00.000Z', 'c', 0)`, [CONSOLE_PROJECT]);
      await c.query(`insert into token_lineage (ancestor_id, descendant_id, depth) values ('tok_a', 'tok_b', 1)`);
      await c.query(
        `insert into payments (id, project_id, rail, status, amount_units, fee_units, amount_micros, fee_micros, currency, recipient, fee_txn_id, next_attempt_at, created_at, updated_at, token_id)
         select t.id, t.project_id, case t.type when 'x402_payment' then 'x402' when 'payment' then 'fiat' else 'usdc_transfer' end, t.status, t.amount, 10, t.amount, 10, 'usdc',
           'https://api' || (t.pos % 7) || '.example/v1', replace(t.id, '_1', '_0'), t.created_at, t.created_at, t.created_at,
           (array['tok_a', 'tok_b', 'tok_c'])[1 + t.pos % 3]
         from transactions t where t.type in ('x402_payment', 'usdc_transfer', 'payment')`,
      );
      await c.query(`vacuum analyze transactions`);
      await c.query(`vacuum analyze payments`);
      const n = Number((await c.query(`select count(*) as n from transactions`)).rows[0].n);
      const row = (await c.query(`select created_at, pos from transactions where pos >= $1 and type <> 'platform_fee' order by pos limit 1`, [Math.floor(n / 2)])).rows[0];
      middle = { created_at: row.created_at, pos: Number(row.pos) };
    } finally {
      c.release();
    }
  }, 300_000);
  afterAll(async () => {
    await pg?.close();
  });

  const all: ConsoleFilter = { types: LISTED_TYPES };
  const cases: [string, ConsoleFilter, boolean, number][] = [
    // name, filter, from the middle, the most index entries a range may read per page row asked (the filter's selectivity)
    ["plain", all, false, 1],
    ["plain, half way", all, true, 1],
    ["rail x402 (a type)", { types: ["x402_payment"] }, true, 3],
    ["status failed", { ...all, statuses: ["failed"] }, false, 40],
    ["one agent", { ...all, tokenIds: ["tok_c"] }, true, 1],
    ["an agent and its sub-agent", { ...all, tokenIds: ["tok_a", "tok_b"] }, true, 1],
    ["an agent, rail usdc_transfer", { types: ["usdc_transfer"], tokenIds: ["tok_a"] }, false, 8],
  ];

  test.each(cases)("%s: index scans only, none past its page", async (_name, filter, fromMiddle, spread) => {
    const reads = new ConsoleTransactions(pg.traced, new TransactionReads(pg.traced, "postgres"));
    pg.issued.length = 0;
    const page = await reads.page(CONSOLE_PROJECT, filter, { limit: LIMIT, ...(fromMiddle ? { after: { createdAt: middle.created_at, pos: middle.pos } } : {}) });
    expect(page.rows.length).toBe(LIMIT);
    let scans = 0;
    for (const statement of pg.issued.splice(0)) {
      for (const { node } of planNodes(await pg.explain(statement))) {
        const relation = node["Relation Name"];
        if (relation !== "transactions" && relation !== "payments") continue;
        scans++;
        expect(node["Node Type"], `${relation} in ${statement.sql}`).toMatch(/^Index (Only )?Scan$/);
        // A range reads its page (limit + 1), and at most the cursor's own instant and the entry that ends
        // the last instant (an agent's range is sorted by position within an instant); a lookup by key (the
        // page's rows, their payments and fees) reads one entry per loop.
        expect(node["Actual Rows"], `${node["Index Name"]} in ${statement.sql}`).toBeLessThanOrEqual(spread * (LIMIT + 1) + 2);
      }
    }
    expect(scans).toBeGreaterThan(0);
  });
});
