// Webhooks end to end on the real sandbox server and chain: a receiver that answers 500 twice, then 200,
// gets every event of a deposit, a USDC payment and a bank payment that is returned, each signed per
// Standard Webhooks (verified with the `standardwebhooks` package), retried after growing delays of the
// injected clock, each carrying the transaction as GET /v1/transactions/{id} shows it.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadWebhookSecretKey } from "../../src/masterKeys.ts";
import { newId } from "../../src/ids.ts";
import { SANDBOX_RETURN_ACCOUNT } from "../../src/rails/fiat/sandboxProvider.ts";
import { createWebhookEndpoint } from "../../src/services/webhooks/endpoints.ts";
import { type TestServer, startTestServer } from "../../src/testing/harness.ts";
import { RETRY_SCHEDULE_MS } from "../../src/workers/webhookDelivery.ts";
import { freePort } from "../support/net.ts";
import { poll } from "../support/poll.ts";
import { startReceiver } from "../support/webhookReceiver.ts";
import { depositRows, webhookDeliveries } from "../../src/ledger/testing.ts";

const root = resolve(import.meta.dirname, "../../../..");
const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe("webhooks to a client's receiver (sandbox server, real chain)", () => {
  let s: TestServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  // The deliveries' clock: real time plus what the test stepped forward.
  let offsetMs = 0;
  const clock = () => new Date(Date.now() + offsetMs);
  beforeAll(async () => {
    receiver = await startReceiver((_id, seen) => (seen < 2 ? 500 : 200));
    s = await startTestServer({ env: { WEBHOOK_INTERVAL_MS: "50", RATE_LIMIT_PER_MINUTE: "100000" }, webhookClock: clock });
  });
  afterAll(async () => {
    await s?.stop();
    await receiver?.close();
  });
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${s.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };

  test("behavior: every event of a deposit, a USDC payment and a returned bank payment arrives, signed, after two failures, with growing delays", async () => {
    const ctx = s.server.ctx;
    const { secret } = await createWebhookEndpoint({ ledger: ctx.ledger, clock, newId, mode: "sandbox", secretKey: () => loadWebhookSecretKey(ctx.config) }, { projectId: s.projectId, url: receiver.url });
    await s.fund(20_000_000n);
    const usdc = await call("POST", "/v1/pay", { recipient, amount_usd: 1 });
    const bank = await call("POST", "/v1/pay", { recipient: { name: "Returns Co", account_number: SANDBOX_RETURN_ACCOUNT, routing_number: "021000021" }, amount_usd: 4 });
    expect([usdc.status, bank.status]).toEqual([201, 201]);
    const final = (id: string, status: string) => poll(`${id} ${status}`, async () => ((await ctx.ledger.payments.getPayment(id))?.status === status ? true : undefined));
    await final(usdc.json.id, "completed");
    await final(bank.json.id, "reversed");

    // Step the deliveries' clock to each next attempt until every event is delivered.
    await poll("every event delivered", async () => {
      const open = (await webhookDeliveries(ctx.ledger)).filter((d) => d.state !== "delivered");
      if (open.length === 0) return true;
      const next = await ctx.ledger.webhooks.nextDueAt();
      if (next) offsetMs = Math.max(offsetMs, Date.parse(next) - Date.now());
      return undefined;
    });

    const deposit = (await depositRows(ctx.ledger, { projectId: s.projectId }))[0]!.txn_id!;
    const typesOf = (objectId: string) => [...new Set(receiver.received.filter((r) => r.data.id === objectId).map((r) => `${r.id} ${r.type}`))].map((k) => k.split(" ")[1]);
    expect(typesOf(deposit)).toEqual(["deposit.pending", "deposit.credited"]);
    expect(typesOf(usdc.json.id)).toEqual(["payment.created", "payment.processing", "payment.completed"]);
    expect(typesOf(bank.json.id)).toEqual(["payment.created", "payment.processing", "payment.completed", "payment.reversed"]);

    // Each event: three attempts with the same id and bytes, answered 500, 500, 200, the second retry waiting longer.
    const byId = new Map<string, typeof receiver.received>();
    for (const r of receiver.received) byId.set(r.id, [...(byId.get(r.id) ?? []), r]);
    expect(byId.size).toBe(9);
    for (const [id, attempts] of byId) {
      expect(attempts.map((a) => a.answered), id).toEqual([500, 500, 200]);
      expect(new Set(attempts.map((a) => a.body)).size).toBe(1);
      const [a, b, c] = attempts.map((x) => x.timestamp);
      expect(b! - a!).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[0] / 1000);
      expect(c! - b!).toBeGreaterThanOrEqual(RETRY_SCHEDULE_MS[1] / 1000);
    }
    receiver.verifyAll(secret);

    // The payload is the transaction as GET /v1/transactions/{id} shows it, with the status the event reports.
    const last = (type: string, id: string) => receiver.received.find((r) => r.type === type && r.data.id === id)!.data;
    expect(last("payment.reversed", bank.json.id)).toEqual((await call("GET", `/v1/transactions/${bank.json.id}`)).json);
    expect(last("payment.completed", usdc.json.id)).toEqual((await call("GET", `/v1/transactions/${usdc.json.id}`)).json);
    expect(last("deposit.credited", deposit)).toEqual((await call("GET", `/v1/transactions/${deposit}`)).json);
    expect(last("deposit.pending", deposit)).toMatchObject({ id: deposit, type: "usdc_fund", status: "pending", amount: 20_000_000 });
    expect(last("payment.created", bank.json.id)).toMatchObject({ id: bank.json.id, status: "pending", rail: "fiat", recipient: "Returns Co (account ending " + SANDBOX_RETURN_ACCOUNT.slice(-4) + ")" });
  });

  test("behavior: the README's receiver, run as written, verifies and prints an event", async () => {
    const readme = readFileSync(join(root, "README.md"), "utf8");
    const section = readme.slice(readme.indexOf("## Webhooks"), readme.indexOf("\n## ", readme.indexOf("## Webhooks") + 1));
    const code = /```js\n([\s\S]*?)```/.exec(section)![1]!;
    const port = await freePort();
    const ctx = s.server.ctx;
    offsetMs = 0; // the receiver checks the signature's time against its own clock
    const { secret } = await createWebhookEndpoint({ ledger: ctx.ledger, clock, newId, mode: "sandbox", secretKey: () => loadWebhookSecretKey(ctx.config) }, { projectId: s.projectId, url: `http://127.0.0.1:${port}/`, events: ["deposit.credited"] });
    // Run from the repository, where `standardwebhooks` resolves as it would after `npm install standardwebhooks`.
    const child = spawn(process.execPath, ["--input-type=module", "-e", code.replace("listen(4000)", `listen(${port})`)], { cwd: root, env: { ...process.env, WEBHOOK_SECRET: secret }, stdio: ["ignore", "pipe", "pipe"] });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    try {
      // Unsigned: refused.
      await poll("the receiver listening", async () => (await fetch(`http://127.0.0.1:${port}/`, { method: "POST", body: "{}" }).catch(() => undefined))?.status === 400 ? true : undefined);
      await s.fund(1_000_000n);
      const line = await poll("the receiver's line", async () => /deposit\.credited (txn_\S+) completed/.exec(out) ?? undefined);
      expect((await call("GET", `/v1/transactions/${line[1]}`)).json).toMatchObject({ type: "usdc_fund", amount: 1_000_000, status: "completed" });
    } finally {
      child.kill();
    }
  });
});
