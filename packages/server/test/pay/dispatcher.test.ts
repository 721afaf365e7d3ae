// The dispatcher's hand-offs, on a real SQLite ledger: a submitted payment is taken up on the next turn of
// the event loop (after the accepting request has answered), and whatever it has not taken up when it
// drains, or cannot queue, goes to the worker with its lease released. The rail here only records what it
// is asked to do; the real rails are exercised end to end in the other pay tests.
import { afterEach, expect, test } from "vitest";
import type { Payment } from "../../src/domain/payment.ts";
import type { Rails } from "../../src/rails/rails.ts";
import { createDispatcher } from "../../src/settlement/dispatcher.ts";
import { type TestContext, createTestContext } from "../support/context.ts";
import { fundedProject, holdSmall } from "../support/holds.ts";

let t: TestContext | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

async function setUp() {
  t = await createTestContext("sqlite");
  const { ctx } = t;
  const advanced: string[] = [];
  // Like every rail, it resolves a payment before it says it is done.
  const advance = async (p: Payment) => {
    advanced.push(p.id);
    await ctx.ledger.payments.resolve(p.id, "completed");
    return { done: true };
  };
  ctx.rails = { byName: { usdc_transfer: { advance } } } as unknown as Rails;
  const projectId = await fundedProject(ctx);
  const hold = () => holdSmall(ctx, projectId, { inFlightUntil: new Date(Date.now() + 60_000).toISOString(), leaseOwner: ctx.instanceId });
  return { ctx, advanced, hold };
}

test("behavior: a submitted payment is advanced on the next turn of the event loop, not during submit", async () => {
  const { ctx, advanced, hold } = await setUp();
  const dispatcher = createDispatcher(ctx, ctx.rails!);
  const p = await hold();
  dispatcher.submit(p);
  await Promise.resolve();
  expect(advanced).toEqual([]);
  await new Promise((r) => setImmediate(r));
  await dispatcher.drain();
  expect(advanced).toEqual([p.id]);
  // Done: final, and resolving it released the lease for good.
  expect((await ctx.ledger.payments.getPayment(p.id))!).toMatchObject({ status: "completed", leaseOwner: null });
});

test("behavior: a payment submitted just before drain is handed to the worker, never advanced here", async () => {
  const { ctx, advanced, hold } = await setUp();
  const dispatcher = createDispatcher(ctx, ctx.rails!);
  const p = await hold();
  dispatcher.submit(p);
  await dispatcher.drain();
  await new Promise((r) => setTimeout(r, 20));
  expect(advanced).toEqual([]);
  const row = (await ctx.ledger.payments.getPayment(p.id))!;
  expect(row.leaseOwner).toBeNull();
  expect(Date.parse(row.nextAttemptAt)).toBeLessThanOrEqual(Date.now());
});

test("behavior: beyond queueMax, payments go straight to the worker with their leases released", async () => {
  const { ctx, advanced, hold } = await setUp();
  const dispatcher = createDispatcher(ctx, ctx.rails!, { queueMax: 2, concurrency: 1 });
  const payments = [await hold(), await hold(), await hold(), await hold()];
  for (const p of payments) dispatcher.submit(p);
  await new Promise((r) => setTimeout(r, 50));
  await dispatcher.drain();
  expect(advanced).toEqual(payments.slice(0, 2).map((p) => p.id));
  for (const p of payments.slice(2)) expect((await ctx.ledger.payments.getPayment(p.id))!.leaseOwner).toBeNull();
});

test("behavior: the leases released in one turn are written together, in one write", async () => {
  const { ctx, hold } = await setUp();
  const writes: number[] = [];
  const release = ctx.ledger.payments.releaseLeases.bind(ctx.ledger.payments);
  ctx.ledger.payments.releaseLeases = (leases, owner) => {
    writes.push(leases.length);
    return release(leases, owner);
  };
  const dispatcher = createDispatcher(ctx, ctx.rails!, { queueMax: 2, concurrency: 1 });
  const payments = await Promise.all(Array.from({ length: 6 }, () => hold()));
  for (const p of payments) dispatcher.submit(p);
  await new Promise((r) => setTimeout(r, 50));
  await dispatcher.drain();
  expect(writes[0]).toBe(4);
  for (const p of payments.slice(2)) expect((await ctx.ledger.payments.getPayment(p.id))!.leaseOwner).toBeNull();
});

test("behavior: a payment that waited longer than it may be followed is handed to the worker, never advanced here", async () => {
  const { ctx, advanced, hold } = await setUp();
  // The first step takes 80 ms; the second payment may be followed for 40 ms only.
  const advance = ctx.rails!.byName.usdc_transfer!.advance;
  ctx.rails!.byName.usdc_transfer!.advance = async (p) => {
    await new Promise((r) => setTimeout(r, 80));
    return advance(p);
  };
  const dispatcher = createDispatcher(ctx, ctx.rails!, { concurrency: 1, followMs: 40 });
  const [a, b] = [await hold(), await hold()];
  dispatcher.submit(a);
  dispatcher.submit(b);
  await new Promise((r) => setTimeout(r, 150));
  await dispatcher.drain();
  expect(advanced).toEqual([a.id]);
  expect((await ctx.ledger.payments.getPayment(b.id))!).toMatchObject({ status: "pending", leaseOwner: null });
});

test("behavior: a long queue keeps ids only and reads each payment again at its turn; one finished elsewhere meanwhile is skipped", async () => {
  const { ctx, advanced, hold } = await setUp();
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const advance = ctx.rails!.byName.usdc_transfer!.advance;
  ctx.rails!.byName.usdc_transfer!.advance = async (p) => {
    await gate;
    return advance(p);
  };
  const dispatcher = createDispatcher(ctx, ctx.rails!, { concurrency: 1, rowsMax: 1 });
  const payments = [await hold(), await hold(), await hold()];
  for (const p of payments) dispatcher.submit(p);
  await new Promise((r) => setImmediate(r));
  // While the first is being advanced, the third (queued by id only) fails elsewhere: a worker, say.
  await ctx.ledger.payments.resolve(payments[2]!.id, "failed", { failureReason: "test" });
  release();
  await new Promise((r) => setTimeout(r, 50));
  await dispatcher.drain();
  expect(advanced).toEqual([payments[0]!.id, payments[1]!.id]);
  expect((await ctx.ledger.payments.getPayment(payments[1]!.id))!.status).toBe("completed");
});
