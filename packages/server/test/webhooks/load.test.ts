// Webhooks under load, on real SQLite and PostgreSQL with real receivers on loopback: an attempt's deadline
// counts from when its request can be sent (not while it waits for one of the receiver's connections), an
// endpoint has a bounded number of deliveries in flight, and a receiver that hangs delays no other
// project's first attempts. Shorter deadlines than the defaults keep the tests quick; the ratios are the
// reported ones (a receiver answering in 40 % of the deadline, 12 events at once).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { newId } from "../../src/ids.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { createWebhookEndpoint } from "../../src/services/webhooks/endpoints.ts";
import { createWebhookDeliverer } from "../../src/workers/webhookDelivery.ts";
import { createTestContext, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { startReceiver } from "../support/webhookReceiver.ts";
import { webhookDeliveries } from "../../src/ledger/testing.ts";

const KEY = new Uint8Array(32).fill(7);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(dialects)("webhooks under load (%s)", (dialect) => {
  let t: TestContext;
  const clock = () => new Date();
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  const deps = () => ({ ledger: t.ctx.ledger, clock, newId, mode: "sandbox" as const, secretKey: () => KEY });
  const deliverer = (ledger: Ledger, o: { maxInFlight: number; timeoutMs: number }) =>
    createWebhookDeliverer(ledger, { owner: `w-${Math.random().toString(36).slice(2)}`, clock, logger: t.ctx.logger, mode: "sandbox", secretKey: KEY, ...o, maxInFlightPerEndpoint: 4, leaseMs: 2 * o.timeoutMs + 5_000, disableAfterFailingMs: 86_400_000 });
  /** `n` deposit.pending events of a new project with one endpoint at `url`. */
  async function projectWithEvents(url: string, n: number) {
    const projectId = (await t.ctx.ledger.projects.create({ name: "p", plan: "free" })).id;
    const { endpoint } = await createWebhookEndpoint(deps(), { projectId, url });
    for (let i = 0; i < n; i++) await t.ctx.ledger.deposits.recordSeen({ chain: "base", txHash: `0x${projectId}${i}`, logIndex: 0, projectId, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1 + i, blockNumber: 1, blockHash: "0xh" });
    return endpoint.id;
  }
  const deliveriesOf = (endpointId: string) => webhookDeliveries(t.ctx.ledger, { endpointId });

  test("behavior: 12 events at once to a receiver answering in 40 % of the deadline are 12 requests, none timed out", async () => {
    const receiver = await startReceiver(() => 204, { delayMs: 800 });
    try {
      const endpointId = await projectWithEvents(receiver.url, 12);
      const d = deliverer(t.ctx.ledger, { maxInFlight: 16, timeoutMs: 2_000 });
      // The loop as server.ts runs it: a tick every 50 ms until nothing is left (bounded).
      for (let i = 0; i < 200; i++) {
        await d.tick();
        if ((await deliveriesOf(endpointId)).every((r) => r.state !== "pending")) break;
        await sleep(50);
      }
      await d.drain();
      const rows = await deliveriesOf(endpointId);
      expect(rows.filter((r) => r.last_error !== null).map((r) => r.last_error)).toEqual([]);
      expect(rows.map((r) => [r.state, r.attempts])).toEqual(Array.from({ length: 12 }, () => ["delivered", 1]));
      expect(receiver.received).toHaveLength(12);
      expect(receiver.maxOpen()).toBeLessThanOrEqual(4);
    } finally {
      await receiver.close();
    }
  });

  test("behavior: a receiver of another project that hangs does not hold back a fast receiver's first attempt", async () => {
    const hanging = await startReceiver(() => "hang");
    const fast = await startReceiver(() => 200);
    try {
      // The hanging endpoint's 20 events are older than the fast one's, so they are due first.
      const slow = await projectWithEvents(hanging.url, 20);
      const quick = await projectWithEvents(fast.url, 1);
      const d = deliverer(t.ctx.ledger, { maxInFlight: 8, timeoutMs: 1_500 });
      let hungWhenFastArrived: number | undefined;
      let slowFailuresWhenFastArrived: number | undefined;
      for (let i = 0; i < 100 && hungWhenFastArrived === undefined; i++) {
        await d.tick();
        await sleep(25);
        if (fast.received.length > 0) {
          hungWhenFastArrived = hanging.received.length;
          slowFailuresWhenFastArrived = (await deliveriesOf(slow)).filter((r) => r.last_error !== null).length;
        }
      }
      // The fast receiver was reached while the hanging one's first requests were still open (none had
      // timed out yet), and the hanging one never held more than its endpoint's share of the slots.
      expect([hungWhenFastArrived !== undefined, slowFailuresWhenFastArrived]).toEqual([true, 0]);
      expect(hungWhenFastArrived).toBeLessThanOrEqual(4);
      await d.drain();
      expect((await deliveriesOf(quick)).map((r) => [r.state, r.attempts])).toEqual([["delivered", 1]]);
      const slowRows = await deliveriesOf(slow);
      expect(slowRows.filter((r) => r.attempts > 0).length).toBeLessThanOrEqual(4);
      expect(slowRows.filter((r) => r.last_error !== null).every((r) => /timeout/.test(r.last_error!))).toBe(true);
    } finally {
      await Promise.all([hanging.close(), fast.close()]);
    }
  });
});
