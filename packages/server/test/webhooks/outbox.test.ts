// Webhooks to clients at the database and worker level, on real SQLite and PostgreSQL: events written by
// triggers in the transaction of the change they report (and never without it), delivery signed per
// Standard Webhooks and retried on the schedule under an injected clock, an endpoint failing for days
// disabled, and two deliverers on one PostgreSQL sending each attempt once.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { newId } from "../../src/ids.ts";
import { openDb } from "../../src/ledger/db.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { createWebhookEndpoint, redeliverWebhookEvent } from "../../src/services/webhooks/endpoints.ts";
import { RETRY_SCHEDULE_MS, createWebhookDeliverer } from "../../src/workers/webhookDelivery.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { parseControls } from "../../src/domain/spending.ts";
import { createTestContext, type TestContext } from "../support/context.ts";
import { dialects, ledgerOn } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { startReceiver } from "../support/webhookReceiver.ts";
import { clearWebhookDeliveries, depositRows, webhookDeliveries, webhookEvents } from "../../src/ledger/testing.ts";

const KEY = new Uint8Array(32).fill(7);
const DAY = 86_400_000;

describe.each(dialects)("webhook outbox and delivery (%s)", (dialect) => {
  let t: TestContext;
  let now = Date.now();
  const clock = () => new Date(now);
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  const deps = () => ({ ledger: t.ctx.ledger, clock, newId, mode: "sandbox" as const, secretKey: () => KEY });
  async function funded(ledger: Ledger) {
    const p = await ledger.projects.create({ name: "p", plan: "free" });
    const key = { chain: "base", txHash: `0x${p.id}`, logIndex: 0 };
    await ledger.deposits.recordSeen({ ...key, projectId: p.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1_000_000_000, blockNumber: 1, blockHash: "0xh" });
    await ledger.deposits.credit(key);
    return p.id;
  }
  const eventsOf = async (projectId: string) =>
    (await webhookEvents(t.ctx.ledger, { projectId })).map((e) => [e.type, e.object_id, e.status]);
  const deliverer = (ledger: Ledger, owner: string, extra: { disableAfterFailingMs?: number } = {}) =>
    createWebhookDeliverer(ledger, { owner, clock, logger: t.ctx.logger, mode: "sandbox", secretKey: KEY, maxInFlight: 8, maxInFlightPerEndpoint: 8, timeoutMs: 5_000, leaseMs: 10_000, disableAfterFailingMs: extra.disableAfterFailingMs ?? 2 * DAY });

  test("behavior: every status change of a project with an endpoint writes its event in the same transaction; none without an endpoint or without the change", async () => {
    const ledger = t.ctx.ledger;
    const [withHook, without] = [await ledger.projects.create({ name: "hooked", plan: "free" }), await funded(ledger)];
    await createWebhookEndpoint(deps(), { projectId: withHook.id, url: "http://127.0.0.1:9/x" });
    for (const projectId of [withHook.id, without]) {
      if (projectId === withHook.id) {
        const key = { chain: "base", txHash: `0x${projectId}`, logIndex: 0 };
        await ledger.deposits.recordSeen({ ...key, projectId, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1_000_000_000, blockNumber: 1, blockHash: "0xh" });
        await ledger.deposits.credit(key);
      }
      const a = await ledger.payments.hold(usdcPayment(projectId, 1_000, 20, { idempotencyKey: "k1" }));
      if (a.kind !== "held") throw new Error(a.kind);
      await ledger.payments.updatePayment(a.payment.id, { status: "processing" });
      await ledger.payments.resolve(a.payment.id, "completed", { txHash: "0xabc" });
      await ledger.payments.reverse(a.payment.id, "R01 insufficient funds");
      // A repeat of the key rolls its insert back: no second payment.created.
      expect((await ledger.payments.hold(usdcPayment(projectId, 1_000, 20, { idempotencyKey: "k1" }))).kind).toBe("duplicate");
      const b = await ledger.payments.hold(usdcPayment(projectId, 2_000, 40, { status: "processing" }));
      if (b.kind !== "held") throw new Error(b.kind);
      await ledger.payments.resolve(b.payment.id, "failed", { failureCode: "onchain_reverted", failureReason: "reverted" });
      const controls = { tokenId: newId("tok"), token: parseControls(controlsColumn(parseControlsInput({ approval_above_usd: 1 }, KEY))), project: null, recipientKey: "addr:0x90f79bf6eb2c4f870365e785982e1f101e93b906", approvalTimeoutMs: 60_000 };
      const c = await ledger.payments.hold(usdcPayment(projectId, 5_000_000, 100_000, { controls }));
      if (c.kind !== "held") throw new Error(c.kind);
      if (projectId === without) {
        expect(await eventsOf(without)).toEqual([]);
        continue;
      }
      const deposit = (await depositRows(ledger, { projectId }))[0]!.txn_id;
      expect(await eventsOf(projectId)).toEqual([
        ["deposit.pending", deposit, "seen"],
        ["deposit.credited", deposit, "credited"],
        ["payment.created", a.payment.id, "pending"],
        ["payment.processing", a.payment.id, "processing"],
        ["payment.completed", a.payment.id, "completed"],
        ["payment.reversed", a.payment.id, "reversed"],
        ["payment.created", b.payment.id, "processing"],
        ["payment.processing", b.payment.id, "processing"],
        ["payment.failed", b.payment.id, "failed"],
        ["payment.created", c.payment.id, "pending"],
        ["payment.approval_required", c.payment.id, "pending"],
      ]);
      // One delivery per event for the one endpoint, due when the change happened.
      const deliveries = await webhookDeliveries(ledger, { projectId });
      expect(deliveries).toHaveLength(11);
      expect(deliveries.every((d) => d.state === "pending" && d.attempts === 0)).toBe(true);
      // One transaction's deliveries (the console's transaction page), newest first, of this project only.
      expect((await ledger.webhooks.listDeliveriesOf(projectId, a.payment.id, 10)).map((d) => d.type)).toEqual(["payment.reversed", "payment.completed", "payment.processing", "payment.created"]);
      expect(await ledger.webhooks.listDeliveriesOf(without, a.payment.id, 10)).toEqual([]);
    }
  });

  test("behavior: signed deliveries retried on the schedule under the injected clock; after days of failures the endpoint is disabled and the log says so", async () => {
    const ledger = t.ctx.ledger;
    await clearWebhookDeliveries(ledger);
    const receiver = await startReceiver(() => 500);
    try {
      const projectId = (await ledger.projects.create({ name: "down", plan: "free" })).id;
      const { endpoint, secret } = await createWebhookEndpoint(deps(), { projectId, url: receiver.url, events: ["deposit.pending"] });
      await ledger.deposits.recordSeen({ chain: "base", txHash: `0x${projectId}`, logIndex: 0, projectId, toAddress: "0x0", fromAddress: "0x1", amountMicros: 5, blockNumber: 1, blockHash: "0xh" });
      const d = deliverer(ledger, "one");
      for (let round = 0; round < 20; round++) {
        await d.tick();
        await d.drain();
        const next = await ledger.webhooks.nextDueAt();
        if (!next) break;
        now = Math.max(now, Date.parse(next));
      }
      const times = receiver.received.map((r) => r.timestamp * 1000);
      expect(times).toHaveLength(RETRY_SCHEDULE_MS.length + 1);
      // Each retry waited its step of the schedule (to the second of the header), growing to hours.
      expect(times.slice(1).map((at, i) => Math.round((at - times[i]!) / 1000))).toEqual(RETRY_SCHEDULE_MS.map((ms) => ms / 1000));
      expect(new Set(receiver.received.map((r) => r.id)).size).toBe(1);
      expect(new Set(receiver.received.map((r) => r.body)).size).toBe(1);
      receiver.verifyAll(secret);
      expect(receiver.received[0]!.data).toMatchObject({ type: "usdc_fund", status: "pending", amount: 5, currency: "usdc", tx_hash: `0x${projectId}` });
      const [listed] = await ledger.webhooks.listEndpoints(projectId);
      expect([listed!.disabled_at !== null, listed!.disabled_reason]).toEqual([true, expect.stringMatching(/every delivery failed since .* answered 500/)]);
      expect(t.logs.join("")).toContain(`webhook endpoint ${endpoint.id} disabled`);
      expect(t.logs.join("")).not.toContain(secret.slice(6));
      // Disabled: a new change of the project writes nothing; redelivering an event schedules nothing.
      await ledger.deposits.credit({ chain: "base", txHash: `0x${projectId}`, logIndex: 0 });
      expect((await eventsOf(projectId)).map((e) => e[0])).toEqual(["deposit.pending"]);
      const [event] = await webhookEvents(ledger, { projectId });
      expect(await redeliverWebhookEvent(deps(), event!.id)).toBe(0);
      // Given up on and old: forgotten with its deliveries (bounded per call); a pending one is kept.
      const pending = async () => (await webhookDeliveries(ledger)).filter((d) => d.state === "pending").map((d) => d.event_id);
      const pendingBefore = await pending();
      expect(await ledger.webhooks.prune(new Date(now + DAY).toISOString(), 1_000)).toBeGreaterThanOrEqual(1);
      expect(await ledger.webhooks.getEvent(event!.id)).toBeUndefined();
      expect(await pending()).toEqual(pendingBefore);
    } finally {
      await receiver.close();
    }
  });

  test.runIf(dialect === "postgres")("behavior: two deliverers on one PostgreSQL send each attempt of each event once", async () => {
    const ledger = t.ctx.ledger;
    await clearWebhookDeliveries(ledger);
    // The first attempt of each event fails, the second succeeds.
    const receiver = await startReceiver((_id, seen) => (seen === 0 ? 500 : 200));
    const second = openDb({ kind: "postgres", url: t.db.url! });
    try {
      const projectId = (await ledger.projects.create({ name: "busy", plan: "free" })).id;
      await createWebhookEndpoint(deps(), { projectId, url: receiver.url });
      for (let i = 0; i < 40; i++) await ledger.deposits.recordSeen({ chain: "base", txHash: `0x${projectId}${i}`, logIndex: 0, projectId, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1 + i, blockNumber: 1, blockHash: "0xh" });
      const a = deliverer(ledger, "a");
      const b = deliverer(ledgerOn(second, clock), "b");
      for (let round = 0; round < 40; round++) {
        const claimed = await Promise.all([a.tick(), b.tick(), a.tick(), b.tick()]);
        await Promise.all([a.drain(), b.drain()]);
        if (claimed.every((n) => n === 0)) {
          const next = await ledger.webhooks.nextDueAt();
          if (!next) break;
          now = Math.max(now, Date.parse(next));
        }
      }
      const perId = new Map<string, number>();
      for (const r of receiver.received) perId.set(r.id, (perId.get(r.id) ?? 0) + 1);
      expect(perId.size).toBe(40);
      expect([...perId.values()].every((n) => n === 2)).toBe(true);
      const states = await webhookDeliveries(ledger);
      expect(states.every((s) => s.state === "delivered" && s.attempts === 2)).toBe(true);
    } finally {
      await second.close();
      await receiver.close();
    }
  });
});
