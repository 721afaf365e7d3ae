// Holds and resolutions asked for together, on both databases: SQLite runs them in one group commit
// (groupCommit.ts), PostgreSQL as one statement per project for holds (pgHolds.ts) and one statement
// for resolutions (pgResolves.ts). Whatever the batching, each must come out as if it had run alone,
// in the order asked: these tests start many at once and check every outcome, the balances, the
// positions of the transactions and the journal.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Ledger } from "../src/ledger/store.ts";
import { type NewPayment } from "../src/ledger/payments.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { newId } from "../src/ids.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "./support/db.ts";
import { usdcPayment } from "./support/holds.ts";
import { interceptQueries } from "../src/ledger/testing.ts";

/**
 * The database of these tests. On PostgreSQL its sessions wait a minute before looking for a deadlock
 * (one second by default): a deadlock, which the batches' lock order must rule out, then outlasts the
 * test instead of being broken and hidden by the batch's retry of each write alone.
 */
const openTestDb = (dialect: "sqlite" | "postgres") => createTestDb(dialect, { pgSettings: "-c deadlock_timeout=60s" });

/** A hold of `totalMicros` in all: the fee is 1. */
const holdOf = (projectId: string, totalMicros: number, key: string | null = null): NewPayment => usdcPayment(projectId, totalMicros - 1, 1, { idempotencyKey: key });

async function fundedProject(ledger: Ledger, micros: number): Promise<string> {
  const project = await ledger.projects.create({ name: "b", plan: "free" });
  const key = { chain: "base", txHash: `0x${newId("txn")}`, logIndex: 0 };
  await ledger.deposits.recordSeen({ ...key, projectId: project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: micros, blockNumber: 1, blockHash: "0xh" });
  await ledger.deposits.credit(key);
  return project.id;
}

/** The statements the ledger sends to the database, by their first words. */
function countStatements(ledger: Ledger) {
  const seen: string[] = [];
  const restore = interceptQueries(ledger, (q, send) => {
    seen.push(q.sql);
    return send(q);
  });
  return { seen, restore };
}

describe.each(dialects)("holds and resolutions asked for together, on %s", (dialect) => {
  let db: TestDb;
  let ledger: Ledger;
  beforeAll(async () => {
    db = await openTestDb(dialect);
    ledger = ledgerOn(db);
  });
  afterAll(async () => db.drop());

  test("behavior: holds asked together are judged in the order asked: one too large is refused with what was left, the next smaller one is held", async () => {
    const projectId = await fundedProject(ledger, 100);
    const count = countStatements(ledger);
    const results = await Promise.all([30, 80, 50, 25].map((t) => ledger.payments.hold(holdOf(projectId, t))));
    count.restore();
    expect(results.map((r) => r.kind)).toEqual(["held", "insufficient", "held", "insufficient"]);
    expect(results[1]).toMatchObject({ availableMicros: 70 });
    expect(results[3]).toMatchObject({ availableMicros: 20 });
    // On PostgreSQL the four were one call (no balance read afterwards either).
    if (dialect === "postgres") expect(count.seen.map((s) => s.includes("aw_hold_batch("))).toEqual([true]);
    expect((await ledger.balances.get(projectId))!).toMatchObject({ available_micros: 20, tx_count: 1 + 4 });
    // The held payments' transactions take positions 2..5 in the order asked (fee, then rail, each).
    const rows = await db.db.selectFrom("transactions").select(["pos", "type", "amount"]).where("project_id", "=", projectId).orderBy("pos").execute();
    expect(rows.map((r) => [Number(r.pos), r.type, Number(r.amount)])).toEqual([
      [1, "usdc_fund", 100],
      [2, "platform_fee", 1],
      [3, "usdc_transfer", 29],
      [4, "platform_fee", 1],
      [5, "usdc_transfer", 49],
    ]);
    expect((await verifyLedger(db.db)).problems).toEqual([]);
  });

  test("behavior: one idempotency key twice among holds asked together → one held, the other answers the same payment", async () => {
    const projectId = await fundedProject(ledger, 1_000);
    const results = await Promise.all([ledger.payments.hold(holdOf(projectId, 10, "same")), ledger.payments.hold(holdOf(projectId, 20)), ledger.payments.hold(holdOf(projectId, 10, "same"))]);
    expect(results.map((r) => r.kind).sort()).toEqual(["duplicate", "held", "held"]);
    const same = results.filter((r) => (r.kind === "held" || r.kind === "duplicate") && r.payment.idempotencyKey === "same");
    expect(new Set(same.map((r) => (r.kind === "held" || r.kind === "duplicate") && r.payment.id)).size).toBe(1);
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(1_000 - 30);
    expect((await verifyLedger(db.db)).problems).toEqual([]);
  });

  test("behavior: resolutions asked together, completed and failed across two projects, each changes its payment once", async () => {
    const [a, b] = [await fundedProject(ledger, 1_000), await fundedProject(ledger, 1_000)];
    // The fourth carries a rail state from its hold, which its resolution (giving none) must keep.
    const kept = { stage: "relayed", transfers: [] };
    const held = await Promise.all([a, a, a, b, b].map((p, i) => ledger.payments.hold({ ...holdOf(p, 100 + i), ...(i === 3 ? { railState: kept } : {}) })));
    const ids = held.map((h) => (h.kind === "held" ? h.payment.id : ""));
    const count = countStatements(ledger);
    const outcomes = await Promise.all([
      ledger.payments.resolve(ids[0]!, "completed", { txHash: "0xaaa" }),
      ledger.payments.resolve(ids[1]!, "failed", { failureReason: "reverted" }),
      ledger.payments.resolve(ids[2]!, "completed", { railState: '{"stage":"relayed","logs":[]}' }),
      ledger.payments.resolve(ids[3]!, "failed"),
      ledger.payments.resolve(ids[4]!, "completed", { responseJson: "{}" }),
      // The same payment again in the same turn: it changed once, this one reports the final row.
      ledger.payments.resolve(ids[0]!, "failed"),
    ]);
    count.restore();
    expect(outcomes.map((o) => [o.changed, o.payment.status])).toEqual([
      [true, "completed"],
      [true, "failed"],
      [true, "completed"],
      [true, "failed"],
      [true, "completed"],
      [false, "completed"],
    ]);
    expect(outcomes[0]!.payment).toMatchObject({ txHash: "0xaaa", leaseOwner: null });
    expect(outcomes[1]!.payment.failureReason).toBe("reverted");
    expect(outcomes[4]!.payment.responseJson).toBe("{}");
    // A rail state given is stored with the resolution; one not given stays as it was.
    expect(outcomes[2]!.payment.railState).toBe('{"stage":"relayed","logs":[]}');
    expect(outcomes[3]!.payment.railState).toBe(JSON.stringify(kept));
    if (dialect === "postgres") expect(count.seen.filter((s) => s.includes("aw_resolve_batch("))).toHaveLength(1);
    // Failed ones are credited back; completed ones stay spent.
    expect((await ledger.balances.get(a))!.available_micros).toBe(1_000 - 100 - 102);
    expect((await ledger.balances.get(b))!.available_micros).toBe(1_000 - 104);
    const tx = await db.db.selectFrom("transactions").select(["payment_id", "status"]).where("payment_id", "in", ids).execute();
    for (const t of tx) expect(t.status).toBe(outcomes[ids.indexOf(t.payment_id!)]!.payment.status);
    expect((await verifyLedger(db.db)).problems).toEqual([]);
  });

  test("property: rounds of holds, resolutions and returns started at once come out as if each had run alone", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.record({
            holds: fc.array(fc.record({ project: fc.nat(1), total: fc.integer({ min: 2, max: 400 }), key: fc.option(fc.nat(3), { nil: null }) }), { maxLength: 8 }),
            resolves: fc.array(fc.record({ pick: fc.nat(), outcome: fc.constantFrom("completed" as const, "failed" as const) }), { maxLength: 6 }),
            reverses: fc.array(fc.nat(), { maxLength: 2 }),
          }),
          { minLength: 1, maxLength: 5 },
        ),
        async (rounds) => {
          const projects = [await fundedProject(ledger, 1_000), await fundedProject(ledger, 700)];
          const credited = new Map([[projects[0]!, 1_000], [projects[1]!, 700]]);
          const payments: { id: string; project: string; total: number }[] = [];
          const failed = new Set<string>();
          // Returned payments get their amount back and keep paying their fee (1 micro-USDC, holdOf).
          const returnedIds = new Set<string>();
          const run = newId("txn");
          for (const round of rounds) {
            const holds = round.holds.map((h) => ({ ...h, projectId: projects[h.project]! }));
            const picks = payments.length ? round.resolves.map((r) => ({ ...r, p: payments[r.pick % payments.length]! })) : [];
            const returned = payments.length ? round.reverses.map((n) => payments[n % payments.length]!) : [];
            const [held, resolved, reversed] = await Promise.all([
              Promise.all(holds.map((h) => ledger.payments.hold(holdOf(h.projectId, h.total, h.key === null ? null : `${run}-${h.key}`)))),
              Promise.all(picks.map((r) => ledger.payments.resolve(r.p.id, r.outcome))),
              // ACH returns of completed payments, at the same time (a return of anything else changes nothing).
              Promise.all(returned.map((p) => ledger.payments.reverse(p.id, "returned"))),
            ]);
            reversed.forEach((r, i) => {
              if (r) returnedIds.add(returned[i]!.id);
            });
            held.forEach((r, i) => {
              if (r.kind === "held") payments.push({ id: r.payment.id, project: holds[i]!.projectId, total: holds[i]!.total });
              // Refused only when it did not fit what was available at its turn.
              if (r.kind === "insufficient") expect(r.availableMicros).toBeLessThan(holds[i]!.total);
            });
            resolved.forEach((r, i) => {
              if (r.changed && picks[i]!.outcome === "failed") failed.add(picks[i]!.p.id);
              expect(r.payment.status).not.toBe("pending");
            });
          }
          for (const p of projects) {
            const spent = payments.filter((x) => x.project === p && !failed.has(x.id)).reduce((s, x) => s + (returnedIds.has(x.id) ? 1 : x.total), 0);
            expect((await ledger.balances.get(p))!.available_micros).toBe(credited.get(p)! - spent);
            const pos = (await db.db.selectFrom("transactions").select("pos").where("project_id", "=", p).orderBy("pos").execute()).map((r) => Number(r.pos));
            expect(pos).toEqual(pos.map((_, i) => i + 1));
          }
          expect((await verifyLedger(db.db)).problems).toEqual([]);
        },
      ),
      { numRuns: 25, endOnFailure: true },
    );
  });
});

describe("PostgreSQL: a batch that fails runs again hold by hold, resolution by resolution", () => {
  let db: TestDb;
  let ledger: Ledger;
  beforeAll(async () => {
    db = await createTestDb("postgres");
    ledger = ledgerOn(db);
  });
  afterAll(async () => db.drop());

  test("error: the batched statement fails → nothing of it happened, and each runs alone with its own outcome", async () => {
    const projectId = await fundedProject(ledger, 100);
    let failures = 0;
    const restore = interceptQueries(ledger, (q, send) => {
      // Only the calls that carry several holds or resolutions fail; each one alone goes through.
      const batch = q.sql.includes("aw_hold_batch(") ? q.parameters[1] : q.sql.includes("aw_resolve_batch(") ? q.parameters[0] : undefined;
      if (typeof batch === "string" && (JSON.parse(batch) as unknown[]).length > 1) {
        failures++;
        return Promise.reject(new Error("connection reset"));
      }
      return send(q);
    });
    try {
      const held = await Promise.all([60, 60, 30].map((t) => ledger.payments.hold(holdOf(projectId, t))));
      expect(held.map((r) => r.kind)).toEqual(["held", "insufficient", "held"]);
      const ids = held.flatMap((r) => (r.kind === "held" ? [r.payment.id] : []));
      const resolved = await Promise.all([ledger.payments.resolve(ids[0]!, "failed"), ledger.payments.resolve(ids[1]!, "completed")]);
      expect(resolved.map((r) => [r.changed, r.payment.status])).toEqual([
        [true, "failed"],
        [true, "completed"],
      ]);
    } finally {
      restore();
    }
    expect(failures).toBe(2);
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(100 - 30);
    expect((await verifyLedger(db.db)).problems).toEqual([]);
  });
});
