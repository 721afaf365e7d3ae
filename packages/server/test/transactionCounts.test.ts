// The per-day counters behind a filtered list's total_count (migration 0008 on SQLite, 0025 on PostgreSQL)
// equal a count of the rows after random operations run concurrently on a few projects: holds (some
// refused), steps to processing, completions, failures, reversals and deposits, and every transaction keeps its
// payment's status. And migration 0025 counts the rows a PostgreSQL database already holds.
import fc from "fast-check";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { migrateToLatest } from "../src/ledger/migrations.ts";
import { openDb } from "../src/ledger/db.ts";
import type { TransactionFilter } from "../src/ledger/transactionReads.ts";
import { createPgSchema, createTestDb, dialects, ledgerOn, type TestDb } from "./support/db.ts";

type Op =
  | { kind: "deposit"; project: number; amount: number }
  | { kind: "pay"; project: number; amount: number }
  | { kind: "process"; pick: number }
  | { kind: "resolve"; pick: number; outcome: "completed" | "failed" }
  | { kind: "reverse"; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("deposit" as const), project: fc.nat(2), amount: fc.integer({ min: 1, max: 30_000_000 }) }),
  fc.record({ kind: fc.constant("pay" as const), project: fc.nat(2), amount: fc.integer({ min: 1, max: 20_000_000 }) }),
  fc.record({ kind: fc.constant("process" as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant("resolve" as const), pick: fc.nat(), outcome: fc.constantFrom("completed" as const, "failed" as const) }),
  fc.record({ kind: fc.constant("reverse" as const), pick: fc.nat() }),
);

/** Counter rows that are not zero, and the rows counted directly, both as `project|day|type|status → n`. */
async function countersAndRows(db: TestDb["db"]): Promise<{ counters: Record<string, number>; rows: Record<string, number> }> {
  const read = async (text: string) =>
    Object.fromEntries((await sql<{ k: string; n: number | string }>`${sql.raw(text)}`.execute(db)).rows.map((r) => [r.k, Number(r.n)]));
  return {
    counters: await read(`select project_id || '|' || day || '|' || type || '|' || status as k, sum(n) as n from transaction_counts group by 1 having sum(n) <> 0`),
    rows: await read(`select project_id || '|' || substr(created_at, 1, 10) || '|' || type || '|' || status as k, count(*) as n from transactions group by 1`),
  };
}

describe.each(dialects)("transaction counters under concurrent writes on %s", (dialect) => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb(dialect);
  });
  afterAll(async () => db.drop());

  test("property: after any batch of concurrent operations, each counter equals the rows it counts", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 5 }), async (rounds) => {
        run++;
        const ledger = ledgerOn(db);
        const projects: string[] = [];
        for (let i = 0; i < 3; i++) projects.push((await ledger.projects.create({ name: `c${run}-${i}`, plan: "free" })).id);
        const payments: string[] = [];
        let n = 0;
        const apply = async (op: Op): Promise<void> => {
          const i = ++n;
          if (op.kind === "deposit") {
            const key = { chain: "base", txHash: `0x${run}-${i}`, logIndex: 0 };
            await ledger.deposits.recordSeen({ ...key, projectId: projects[op.project]!, toAddress: "0x0", fromAddress: "0x1", amountMicros: op.amount, blockNumber: i, blockHash: "0xh" });
            await ledger.deposits.credit(key);
          } else if (op.kind === "pay") {
            const r = await ledger.payments.hold({
              projectId: projects[op.project]!, rail: "usdc_transfer", railTxnType: "usdc_transfer", amountUnits: op.amount, feeUnits: 1_000,
              amountMicros: op.amount, feeMicros: 1_000, currency: "usdc", recipient: "0xabc", recipientJson: null, merchantName: null,
              description: null, idempotencyKey: null, railState: null, inFlightUntil: new Date().toISOString(), leaseOwner: "t",
            });
            if (r.kind === "held") payments.push(r.payment.id);
          } else if (payments.length) {
            const id = payments[op.pick % payments.length]!;
            if (op.kind === "process") {
              const p = await ledger.payments.getPayment(id);
              if (p?.status === "pending") await ledger.payments.updatePayment(id, { status: "processing" });
            } else if (op.kind === "resolve") await ledger.payments.resolve(id, op.outcome);
            else await ledger.payments.reverse(id, "returned");
          }
        };
        // The operations of a round run at once: writers of one project and of several overlap. A step to
        // processing is the payment's leaseholder's write and never races its resolution: those go first.
        for (const round of rounds) {
          for (const op of round.filter((o) => o.kind === "process")) await apply(op);
          await Promise.all(round.filter((o) => o.kind !== "process").map(apply));
        }
        const { counters, rows } = await countersAndRows(db.db);
        expect(counters).toEqual(rows);
        // Each transaction has its payment's status (a reversal marks only the rail transaction), however the
        // resolutions that ran at once were batched.
        const mismatched = await sql<{ id: string; t: string; p: string }>`select t.id, t.status as t, p.status as p from transactions t join payments p on p.id = t.payment_id
          where p.status <> 'reversed' and t.status <> p.status`.execute(db.db);
        expect(mismatched.rows).toEqual([]);
        // The list's total_count reads them: every type and status of one project, a status, a type.
        const every: TransactionFilter = { types: ["usdc_fund", "usdc_transfer", "platform_fee"], statuses: ["pending", "processing", "completed", "failed", "reversed"] };
        const cases: [string, TransactionFilter][] = [[projects[0]!, every], [projects[1]!, { ...every, statuses: ["completed"] }], [projects[2]!, { ...every, types: ["usdc_transfer"] }]];
        for (const [p, f] of cases) {
          const direct = Object.entries(rows)
            .filter(([k]) => {
              const [project, , type, status] = k.split("|");
              return project === p && f.types.includes(type!) && f.statuses.includes(status!);
            })
            .reduce((sum, [, c]) => sum + c, 0);
          expect(await ledger.transactions.countFiltered(p, f)).toBe(direct);
        }
      }),
      { numRuns: dialect === "sqlite" ? 30 : 20, interruptAfterTimeLimit: 50_000 },
    );
  });
});

describe("migration 0025 on a PostgreSQL database with history", () => {
  test("counts the rows already there, then keeps counting", async () => {
    const s = await createPgSchema();
    const opened = openDb({ kind: "postgres", url: s.url });
    try {
      await migrateToLatest(opened.db, "postgres", "0024_console_one_time_views");
      const c = new pg.Client({ connectionString: s.url });
      await c.connect();
      try {
        await c.query(`insert into projects (id, name, plan, wallet_index, created_at) values ('prj_m', 'm', 'free', 1, '2026-01-01T00:00:00.000Z')`);
        await c.query(`insert into balances (project_id, tx_count) values ('prj_m', 300)`);
        await c.query(`
          insert into transactions (id, project_id, type, status, amount, currency, created_at, pos)
          select 'txn_m' || g, 'prj_m', (array['usdc_fund', 'x402_payment', 'platform_fee'])[1 + g % 3], (array['completed', 'failed', 'pending', 'reversed'])[1 + g % 4],
            1, 'usdc', to_char(timestamp '2026-01-01' + g * interval '37 minutes', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), g
          from generate_series(1, 300) g`);
        // 0025 and 0026 first; later migrations follow them.
        expect((await migrateToLatest(opened.db, "postgres")).slice(0, 2)).toEqual(["0025_postgres_transaction_counts", "0026_postgres_transactions_created"]);
        const before = await countersAndRows(opened.db);
        expect(before.counters).toEqual(before.rows);
        expect(Object.values(before.counters).reduce((a, b) => a + b, 0)).toBe(300);
        // A change in a transaction of several statements, and one rolled back, after the migration.
        await c.query("begin");
        await c.query(`update transactions set status = 'completed' where status = 'pending'`);
        await c.query(`delete from transactions where pos > 290`);
        await c.query("commit");
        await c.query("begin");
        await c.query(`update transactions set status = 'failed'`);
        await c.query("rollback");
        const after = await countersAndRows(opened.db);
        expect(after.counters).toEqual(after.rows);
        expect(Object.values(after.counters).reduce((a, b) => a + b, 0)).toBe(290);
        expect(Object.keys(after.rows).some((k) => k.endsWith("|pending"))).toBe(false);
        expect((await c.query(`select count(*)::int as n from transaction_count_changes`)).rows[0].n).toBe(0);
      } finally {
        await c.end();
      }
    } finally {
      await opened.close();
      await s.drop();
    }
  });
});
