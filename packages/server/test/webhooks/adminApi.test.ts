// Webhook endpoints through the admin API, on real SQLite and PostgreSQL: the CLI's service functions
// over HTTP, every answer parsing with its wire schema, the secret answered once and never listed.
import { AdminWebhookDeleted, AdminWebhookDeliveryList, AdminWebhookEndpoint, AdminWebhookEndpointList, AdminWebhookRedelivery, CreatedAdminWebhookEndpoint, WebhookEventType } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { WEBHOOK_EVENT_TYPES } from "../../src/ledger/webhookOutbox.ts";
import { createAdminCredential } from "../../src/services/adminCredentials.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { tableRows } from "../../src/ledger/testing.ts";

describe.each(dialects)("webhooks in the admin API (%s)", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let admin: string;
  const call = async (method: "GET" | "POST" | "DELETE", url: string, payload?: unknown, credential = admin) => {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${credential}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
    return { status: res.statusCode, body: res.json() };
  };
  beforeAll(async () => {
    t = await createTestContext(dialect);
    t.ctx.webhookSecretKey = new Uint8Array(32).fill(3);
    app = buildApp(t.ctx);
    admin = (await createAdminCredential(t.ctx, { name: "ops" })).credential;
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  test("behavior: create (secret once), list, deliveries, redeliver, enable and delete; refusals with their codes", async () => {
    expect(WebhookEventType.options).toEqual([...WEBHOOK_EVENT_TYPES]);
    const { project, token } = await projectWithToken(t.ctx);
    const created = await call("POST", `/v1/admin/projects/${project.id}/webhooks`, { url: "http://127.0.0.1:9/hooks", events: ["deposit.pending"] });
    expect(created.status).toBe(201);
    const endpoint = CreatedAdminWebhookEndpoint.parse(created.body);
    expect(endpoint).toMatchObject({ project_id: project.id, url: "http://127.0.0.1:9/hooks", events: ["deposit.pending"], state: "enabled", secret: expect.stringMatching(/^whsec_/) });
    const { secret, ...shape } = endpoint;
    expect(AdminWebhookEndpointList.parse((await call("GET", `/v1/admin/projects/${project.id}/webhooks`)).body).data).toEqual([shape]);
    expect(JSON.stringify(await tableRows(t.ctx.ledger, "webhook_endpoints"))).not.toContain(secret.slice(6));

    await t.ctx.ledger.deposits.recordSeen({ chain: "base", txHash: `0x${project.id}`, logIndex: 0, projectId: project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 7, blockNumber: 1, blockHash: "0xh" });
    const [delivery] = AdminWebhookDeliveryList.parse((await call("GET", `/v1/admin/webhooks/${endpoint.id}/deliveries?limit=5`)).body).data;
    expect(delivery).toMatchObject({ type: "deposit.pending", state: "pending", attempts: 0, last_status: null });
    expect(AdminWebhookRedelivery.parse((await call("POST", `/v1/admin/webhook-events/${delivery!.event_id}/redeliver`)).body)).toEqual({ event_id: delivery!.event_id, scheduled: 1 });
    expect(AdminWebhookEndpoint.parse((await call("POST", `/v1/admin/webhooks/${endpoint.id}/enable`)).body)).toEqual(shape);

    for (const [payload, code] of [
      [{ url: "ftp://example.com" }, "webhook_url_invalid"],
      [{ url: "https://example.com", events: ["payment.done"] }, "invalid_request"],
      [{ url: "https://example.com", secret: "mine" }, "invalid_request"],
    ] as const) {
      const r = await call("POST", `/v1/admin/projects/${project.id}/webhooks`, payload);
      expect([r.status, r.body.code], JSON.stringify(payload)).toEqual([400, code]);
    }
    expect((await call("POST", "/v1/admin/projects/prj_missing/webhooks", { url: "https://example.com" })).body.code).toBe("project_not_found");
    expect((await call("POST", "/v1/admin/webhook-events/evt_missing/redeliver")).body.code).toBe("webhook_event_not_found");
    expect((await call("GET", `/v1/admin/projects/${project.id}/webhooks`, undefined, token)).status).toBe(403);

    expect(AdminWebhookDeleted.parse((await call("DELETE", `/v1/admin/webhooks/${endpoint.id}`)).body)).toEqual({ id: endpoint.id, deleted: true });
    expect((await call("DELETE", `/v1/admin/webhooks/${endpoint.id}`)).body.code).toBe("webhook_endpoint_not_found");
    expect((await call("GET", `/v1/admin/projects/${project.id}/webhooks`)).body.data).toEqual([]);
  });
});
