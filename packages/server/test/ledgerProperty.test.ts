import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { verifyLedger } from "../src/ledger/verify.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "./support/db.ts";

type Op =
  | { kind: "deposit"; project: number; amount: number; confirm: "credit" | "drop" | "leave" }
  | { kind: "pay"; project: number; amount: number; fee: number; key: number | null }
  | { kind: "resolve"; pick: number; outcome: "completed" | "failed" }
  | { kind: "reverse"; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant("deposit" as const), project: fc.nat(2), amount: fc.integer({ min: 1, max: 50_000_000 }), confirm: fc.constantFrom("credit" as const, "drop" as const, "leave" as const) }),
  fc.record({ kind: fc.constant("pay" as const), project: fc.nat(2), amount: fc.integer({ min: 1, max: 20_000_000 }), fee: fc.integer({ min: 0, max: 400_000 }), key: fc.option(fc.nat(5), { nil: null }) }),
  fc.record({ kind: fc.constant("resolve" as const), pick: fc.nat(), outcome: fc.constantFrom("completed" as const, "failed" as const) }),
  fc.record({ kind: fc.constant("reverse" as const), pick: fc.nat() }),
);

describe.each(dialects)("journal invariants under random operations on %s", (dialect) => {
  let db: TestDb;
  beforeAll(async () => {
    db = await createTestDb(dialect);
  });
  afterAll(async () => db.drop());

  test("property: every sequence of deposits, holds, posts, voids and reversals verifies", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 25 }), async (ops) => {
        run++;
        const ledger = ledgerOn(db);
        const projects = [];
        for (let i = 0; i < 3; i++) projects.push((await ledger.projects.create({ name: `r${run}-${i}`, plan: "free" })).id);
        const payments: string[] = [];
        const model = new Map(projects.map((p) => [p, 0]));
        let n = 0;
        for (const op of ops) {
          n++;
          const project = projects[(op as { project?: number }).project ?? 0]!;
          if (op.kind === "deposit") {
            const key = { chain: "base", txHash: `0x${run}-${n}`, logIndex: 0 };
            expect(await ledger.deposits.recordSeen({ ...key, projectId: project, toAddress: "0x0", fromAddress: "0x1", amountMicros: op.amount, blockNumber: n, blockHash: "0xh" })).toBe(true);
            // A replayed log is never recorded twice.
            expect(await ledger.deposits.recordSeen({ ...key, projectId: project, toAddress: "0x0", fromAddress: "0x1", amountMicros: op.amount, blockNumber: n, blockHash: "0xh" })).toBe(false);
            if (op.confirm === "credit") {
              expect(await ledger.deposits.credit(key)).toBe(true);
              expect(await ledger.deposits.credit(key)).toBe(false);
              model.set(project, model.get(project)! + op.amount);
            } else if (op.confirm === "drop") {
              expect(await ledger.deposits.drop(key)).toBe(true);
            }
          } else if (op.kind === "pay") {
            const total = op.amount + op.fee;
            const r = await ledger.payments.hold({
              projectId: project, rail: "usdc_transfer", railTxnType: "usdc_transfer", amountUnits: op.amount, feeUnits: op.fee,
              amountMicros: op.amount, feeMicros: op.fee, currency: "usdc", recipient: "0xabc", recipientJson: null, merchantName: null,
              description: null, idempotencyKey: op.key === null ? null : `k${op.key}`, railState: null,
              inFlightUntil: new Date().toISOString(), leaseOwner: "t",
            });
            if (r.kind === "held") {
              expect(model.get(project)!).toBeGreaterThanOrEqual(total);
              model.set(project, model.get(project)! - total);
              payments.push(r.payment.id);
            } else if (r.kind === "insufficient") {
              expect(model.get(project)!).toBeLessThan(total);
            } else {
              expect(op.key).not.toBeNull();
            }
          } else if (op.kind === "resolve" && payments.length) {
            const id = payments[op.pick % payments.length]!;
            const r = await ledger.payments.resolve(id, op.outcome);
            if (r.changed && op.outcome === "failed") model.set(r.payment.projectId, model.get(r.payment.projectId)! + r.payment.amountMicros + r.payment.feeMicros);
            // A hold resolves at most once.
            expect((await ledger.payments.resolve(id, op.outcome === "failed" ? "completed" : "failed")).changed).toBe(false);
          } else if (op.kind === "reverse" && payments.length) {
            const id = payments[op.pick % payments.length]!;
            const before = await ledger.payments.getPayment(id);
            const reversed = await ledger.payments.reverse(id, "test");
            expect(reversed).toBe(before!.status === "completed");
            // The amount comes back; the fee stays earned.
            if (reversed) model.set(before!.projectId, model.get(before!.projectId)! + before!.amountMicros);
            expect(await ledger.payments.reverse(id, "again")).toBe(false);
          }
        }
        for (const p of projects) expect((await ledger.balances.get(p))!.available_micros).toBe(model.get(p));
        const v = await verifyLedger(db.db);
        expect(v.problems).toEqual([]);
      }),
      { numRuns: dialect === "sqlite" ? 60 : 30 },
    );
  });
});
