// The plans PostgreSQL chooses for the console list's pages (ledger/consoleTransactions.ts) at a size where
// the planner has a choice (26,000 events seeded in SQL, their payments made by three tokens): every read
// of `transactions` and `payments` is an index scan, and a page stops after its rows (limit + 1 per range),
// wherever in the history it starts.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConsoleTransactions, type ConsoleFilter, LISTED_TYPES } from "../src/ledger/consoleTransactions.ts";
import { TransactionReads } from "../src/ledger/transactionReads.ts";
import { type TracedPostgres, planNodes, tracedPostgres } from "./support/plans.ts";

const EVENTS = 26_000;
const PROJECT = "prj_console_plans";
const LIMIT = 50;


describe("plans of the console's transactions list on postgres", () => {
  let pg: TracedPostgres;
  let middle: { created_at: string; pos: number };

  beforeAll(async () => {
    pg = await tracedPostgres();
    const c = await pg.pool.connect();
    try {
      await c.query(`insert into projects (id, name, plan, wallet_index, created_at) values ($1, 'plans', 'business', 1, '2025-01-01T00:00:00.000Z')`, [PROJECT]);
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
        [PROJECT, EVENTS],
      );
      await c.query(`insert into api_tokens (id, project_id, token_hash, display_prefix, permissions, created_at, name, depth) values
        ('tok_a', $1, 'ha', 'aw_test_aaaa', 'read,pay,x402', '2025-01-01T00:00:00.000Z', 'a', 0),
        ('tok_b', $1, 'hb', 'aw_test_bbbb', 'read,pay,x402', '2025-01-01T00:00:00.000Z', 'b', 1),
        ('tok_c', $1, 'hc', 'aw_test_cccc', 'read,pay,x402', '2025-01-01T00:00:00.000Z', 'c', 0)`, [PROJECT]);
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
    const page = await reads.page(PROJECT, filter, { limit: LIMIT, ...(fromMiddle ? { after: { createdAt: middle.created_at, pos: middle.pos } } : {}) });
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
