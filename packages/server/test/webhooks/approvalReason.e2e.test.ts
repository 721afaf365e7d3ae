// An operator's decision reaches the client's receiver with its reason and the deciding credential's name:
// payment.approved and payment.denied carry `approval.reason` and `approval.decided_by_name` (an operator
// decided through the admin API), the transaction and the console's status history show the same, and a
// decision without a reason carries no `reason`. Real sandbox server and chain, a real loopback receiver.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadWebhookSecretKey } from "../../src/masterKeys.ts";
import { newId } from "../../src/ids.ts";
import { createAdminCredential } from "../../src/services/adminCredentials.ts";
import { transactionHistory } from "../../src/services/console/transactions.ts";
import { issueToken } from "../../src/services/tokens.ts";
import { createWebhookEndpoint } from "../../src/services/webhooks/endpoints.ts";
import { type TestServer, startTestServer } from "../../src/testing/harness.ts";
import { poll } from "../support/poll.ts";
import { startReceiver } from "../support/webhookReceiver.ts";

const recipient = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe("payment.approved / payment.denied with the decision's reason and decider (sandbox server, real chain)", () => {
  let s: TestServer;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let token: string;
  let admin: string;
  beforeAll(async () => {
    receiver = await startReceiver();
    s = await startTestServer({ env: { WEBHOOK_INTERVAL_MS: "50" } });
    const ctx = s.server.ctx;
    await createWebhookEndpoint({ ledger: ctx.ledger, clock: ctx.clock, newId, mode: "sandbox", secretKey: () => loadWebhookSecretKey(ctx.config) }, { projectId: s.projectId, url: receiver.url, events: ["payment.approved", "payment.denied"] });
    token = (await issueToken(ctx, { projectId: s.projectId, permissions: ["read", "pay"], mode: "test", controls: { approval_above_usd: 1 } })).token;
    admin = (await createAdminCredential(ctx, { name: "ops laptop", role: "approver" })).credential;
    await s.fund(20_000_000n);
  });
  afterAll(async () => {
    await s?.stop();
    await receiver?.close();
  });
  const call = async (path: string, bearer: string, body: unknown) => {
    const res = await fetch(`${s.baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${bearer}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const eventOf = (id: string, type: string) => poll(`${type} of ${id} received`, async () => receiver.received.find((r) => r.type === type && r.data.id === id));

  test("behavior: each decision's event carries its reason and the credential's name; the transaction and its history agree", async () => {
    const approved = await call("/v1/pay", token, { recipient, amount_usd: 2 });
    const denied = await call("/v1/pay", token, { recipient, amount_usd: 3 });
    const silent = await call("/v1/pay", token, { recipient, amount_usd: 4 });
    expect([approved.status, denied.status, silent.status]).toEqual([201, 201, 201]);
    expect((await call(`/v1/admin/payments/${approved.json.id}/approve`, admin, { reason: "expected invoice" })).status).toBe(200);
    expect((await call(`/v1/admin/payments/${denied.json.id}/deny`, admin, { reason: "unknown payee" })).status).toBe(200);
    expect((await call(`/v1/admin/payments/${silent.json.id}/deny`, admin, {})).status).toBe(200);

    const a = await eventOf(approved.json.id, "payment.approved");
    expect(a.data.approval).toMatchObject({ status: "approved", reason: "expected invoice", decided_by_name: "ops laptop" });
    const d = await eventOf(denied.json.id, "payment.denied");
    expect(d.data.approval).toMatchObject({ status: "denied", reason: "unknown payee", decided_by_name: "ops laptop" });
    const quiet = await eventOf(silent.json.id, "payment.denied");
    expect(quiet.data.approval.decided_by_name).toBe("ops laptop");
    expect("reason" in quiet.data.approval).toBe(false);

    const shown = await fetch(`${s.baseUrl}/v1/transactions/${denied.json.id}`, { headers: { authorization: `Bearer ${token}` } });
    expect(((await shown.json()) as any).approval).toMatchObject({ reason: "unknown payee", decided_by_name: "ops laptop" });
    const history = await transactionHistory(s.server.ctx, s.projectId, denied.json.id);
    expect(history.find((h) => h.text.startsWith("Denied"))).toMatchObject({ reason: "unknown payee", decided_by_name: "ops laptop" });
  });
});
