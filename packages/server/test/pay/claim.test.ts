// The worker's claim, on SQLite and PostgreSQL: due payments with a step under way come before new
// ones however old the new ones are, each claimed payment is leased to the claimer, and a leased
// payment is not claimed again until its lease ends. And the worker loop drains a backlog pass after pass.
import { afterEach, describe, expect, test } from "vitest";
import type { Payment } from "../../src/domain/payment.ts";
import type { Rails } from "../../src/rails/rails.ts";
import { createPaymentWorker, startPaymentWorkerLoop } from "../../src/settlement/paymentWorker.ts";
import { dialects } from "../support/db.ts";
import { type TestContext, createTestContext } from "../support/context.ts";
import { fundedProject, holdSmall } from "../support/holds.ts";

let t: TestContext | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe.each(dialects)("claiming due payments on %s", (dialect) => {
  async function setUp() {
    t = await createTestContext(dialect);
    const { ctx } = t;
    const projectId = await fundedProject(ctx);
    /** A held payment, due `dueAgoMs` ago, with no lease. */
    const open = async (status: "pending" | "processing", dueAgoMs: number): Promise<Payment> => {
      const p = await holdSmall(ctx, projectId, { status, inFlightUntil: new Date(Date.now() - 60_000).toISOString(), leaseOwner: "nobody" });
      await ctx.ledger.payments.updatePayment(p.id, { leaseOwner: null, leaseUntil: null, nextAttemptAt: new Date(Date.now() - dueAgoMs).toISOString() });
      return p;
    };
    return { ctx, open };
  }

  test("behavior: due payments with a step under way are claimed before older new ones", async () => {
    const { ctx, open } = await setUp();
    const fresh = [await open("pending", 60_000), await open("pending", 50_000), await open("pending", 40_000)];
    const started = [await open("processing", 1_000), await open("processing", 2_000)];
    const first = await ctx.ledger.payments.claimDuePayments("w1", 30_000, 3);
    expect(first.map((p) => p.id)).toEqual([started[1]!.id, started[0]!.id, fresh[0]!.id]);
    for (const p of first) expect(p).toMatchObject({ leaseOwner: "w1", attempts: 1 });
    // Leased: another claimer gets only what is left.
    const second = await ctx.ledger.payments.claimDuePayments("w2", 30_000, 10);
    expect(second.map((p) => p.id)).toEqual([fresh[1]!.id, fresh[2]!.id]);
    expect(await ctx.ledger.payments.claimDuePayments("w3", 30_000, 10)).toEqual([]);
  });
});

test("behavior: the worker loop runs again at once after a full pass, so a backlog drains without waiting an interval per batch", async () => {
  t = await createTestContext("sqlite");
  const { ctx } = t;
  const advanced = new Set<string>();
  const rails = { byName: { usdc_transfer: { advance: async (p: Payment) => (advanced.add(p.id), { done: true }) } } } as unknown as Rails;
  const projectId = await fundedProject(ctx);
  const n = 130;
  const past = new Date(Date.now() - 1_000).toISOString();
  for (let i = 0; i < n; i++) await holdSmall(ctx, projectId, { inFlightUntil: past, leaseOwner: "nobody", leaseUntil: past });
  const worker = createPaymentWorker(ctx, rails, { batchMax: 50 });
  // An interval far longer than the test: only the immediate re-runs can take the second and third batch.
  const loop = startPaymentWorkerLoop(worker, 600_000, ctx.logger);
  try {
    for (let i = 0; i < 200 && advanced.size < n; i++) await new Promise((r) => setTimeout(r, 50));
    expect(advanced.size).toBe(n);
  } finally {
    await loop.stop();
  }
});

test("behavior: a worker pass leaves finished payments alone and releases the others with their next attempt", async () => {
  t = await createTestContext("sqlite");
  const { ctx } = t;
  const projectId = await fundedProject(ctx);
  const past = new Date(Date.now() - 1_000).toISOString();
  const [done, again] = [await holdSmall(ctx, projectId, { inFlightUntil: past, leaseOwner: "nobody", leaseUntil: past }), await holdSmall(ctx, projectId, { inFlightUntil: past, leaseOwner: "nobody", leaseUntil: past })];
  const rails = {
    byName: {
      usdc_transfer: {
        advance: async (p: Payment) => {
          if (p.id !== done.id) return { done: false, retryInMs: 5_000 };
          await ctx.ledger.payments.resolve(p.id, "completed");
          return { done: true };
        },
      },
    },
  } as unknown as Rails;
  const worker = createPaymentWorker(ctx, rails);
  const before = Date.now();
  expect(await worker.runOnce()).toBe(2);
  const [a, b] = [(await ctx.ledger.payments.getPayment(done.id))!, (await ctx.ledger.payments.getPayment(again.id))!];
  expect(a).toMatchObject({ status: "completed", leaseOwner: null, leaseUntil: null });
  expect(b).toMatchObject({ status: "pending", leaseOwner: null, leaseUntil: null });
  expect(Date.parse(b.nextAttemptAt)).toBeGreaterThanOrEqual(before + 5_000);
  // Not due again before its next attempt.
  expect(await worker.runOnce()).toBe(0);
});
