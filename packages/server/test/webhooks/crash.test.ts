// kill -9 between the state changes and their delivery loses no webhook event: the sandbox server (a real
// child process on a real chain) records a deposit and a USDC payment while the receiver holds every
// delivery open; the server is killed; a new one sends every event again once the dead one's leases run
// out, with the same ids.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createHdCustody } from "../../src/chain/custody.ts";
import { loadConfig } from "../../src/config.ts";
import { loadWebhookSecretKey } from "../../src/masterKeys.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createToken } from "../../src/services/tokens.ts";
import { createWebhookEndpoint } from "../../src/services/webhooks/endpoints.ts";
import { TEST_MNEMONIC } from "../support/context.ts";
import { poll } from "../support/poll.ts";
import { type SandboxProcessFixture, startSandboxProcessFixture } from "../support/sandboxProcess.ts";
import { type ServerProcess, spawnServer } from "../support/spawnServer.ts";
import { startReceiver } from "../support/webhookReceiver.ts";
import { webhookDeliveries, webhookEvents } from "../../src/ledger/testing.ts";

describe("webhooks across a kill -9", () => {
  let f: SandboxProcessFixture;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    f = await startSandboxProcessFixture("whcrash");
  });
  afterAll(async () => {
    await server?.stop();
    await f?.close();
  });

  test("behavior: events whose delivery was under way or not yet begun when the server died are all delivered by the next one", async () => {
    const { dev, ledger } = f;
    const env = f.env({ WEBHOOK_INTERVAL_MS: "50", WEBHOOK_TIMEOUT_MS: "1000" });
    const project = await ledger.projects.create({ name: "hooked", plan: "free" });
    const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index);
    await ledger.projects.setWalletAddress(project.id, wallet);
    const token = (await createToken({ ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read", "pay"], mode: "test" })).token;
    let hold = true;
    const receiver = await startReceiver(() => (hold ? "hang" : 200));
    try {
      const config = loadConfig(env);
      await createWebhookEndpoint({ ledger, clock: systemClock, newId, mode: "sandbox", secretKey: () => loadWebhookSecretKey(config) }, { projectId: project.id, url: receiver.url });
      server = await spawnServer(env);
      await dev.mint(wallet, 5_000_000n);
      await poll("deposit credited", async () => ((await ledger.balances.get(project.id))!.available_micros > 0 ? true : undefined));
      const res = await fetch(`${server.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify({ recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", amount_usd: 1 }) });
      const paymentId = ((await res.json()) as { id: string }).id;
      await poll("payment completed", async () => ((await ledger.payments.getPayment(paymentId))?.status === "completed" ? true : undefined));
      await poll("a delivery under way", async () => (receiver.received.length > 0 ? true : undefined));
      await server.kill9();
      server = undefined;

      const events = await webhookEvents(ledger, { projectId: project.id });
      expect(events.map((e) => e.type)).toEqual(["deposit.pending", "deposit.credited", "payment.created", "payment.processing", "payment.completed"]);
      const undelivered = (await webhookDeliveries(ledger)).filter((d) => d.state !== "delivered");
      expect(undelivered).toHaveLength(events.length);
      const underWay = new Set(receiver.received.map((r) => r.id));

      hold = false;
      server = await spawnServer(env);
      await poll("every event delivered", async () => {
        const open = (await webhookDeliveries(ledger)).filter((d) => d.state !== "delivered");
        return open.length === 0 ? true : undefined;
      });
      // Each event was delivered (answered 200); those under way at the kill were sent again under the same id.
      expect(receiver.delivered()).toEqual(new Set(events.map((e) => e.id)));
      for (const id of underWay) expect(receiver.received.filter((r) => r.id === id).length).toBeGreaterThanOrEqual(2);
    } finally {
      await receiver.close();
    }
    // Two server starts (each allowed 90 s by spawnServer) on two cores shared with the rest of the suite.
  }, 300_000);
});
