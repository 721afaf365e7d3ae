// A payment waiting for a person says so where an agent looks: the /v1/pay answer and GET /v1/transactions/{id}
// carry `approval` (required → approved or denied, with expires_at and decided_at), and the decision writes a
// payment.approved / payment.denied webhook event in the same write (a trigger, migration 0029). Payments
// that need no approval carry no `approval`. Real server, real chain, on SQLite and PostgreSQL.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { decidePayment } from "../../src/services/approvals.ts";
import { issueToken } from "../../src/services/tokens.ts";
import { createWebhookEndpoint } from "../../src/services/webhooks/endpoints.ts";
import { type X402World, randomAddress, startX402World } from "../x402/support/x402World.ts";
import { webhookEvents } from "../../src/ledger/testing.ts";

describe.each(["sqlite", "postgres"] as const)("approval state of a payment (%s)", (database) => {
  let w: X402World;
  let token: string;
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 20_000_000n });
    token = (await issueToken(w.ctx, { projectId: w.server.projectId, permissions: ["read", "pay"], mode: "test", controls: { approval_above_usd: 1 } })).token;
    await createWebhookEndpoint({ ledger: w.ctx.ledger, clock: w.ctx.clock, newId: w.ctx.newId, mode: "sandbox", secretKey: () => randomBytes(32) }, { projectId: w.server.projectId, url: "http://127.0.0.1:9/hook", events: ["payment.approval_required", "payment.approved", "payment.denied"] });
  });
  afterAll(async () => {
    await w?.stop();
  });
  const events = async (id: string) => (await webhookEvents(w.ctx.ledger, { objectId: id })).map((e) => e.type);

  test("behavior: required in the pay answer and the transaction; approved then shows decided_at, and payment.approved is written", async () => {
    const paid = await w.post("/v1/pay", { recipient: randomAddress(), amount_usd: 2 }, token);
    expect(paid.status, JSON.stringify(paid.body)).toBe(201);
    expect(paid.body).toMatchObject({ status: "pending", approval: { status: "required", decided_at: null } });
    const expiresAt = (paid.body.approval as { expires_at: string }).expires_at;
    expect(Date.parse(expiresAt)).toBeGreaterThan(Date.now());
    const id = String(paid.body.id);
    expect((await w.get(`/v1/transactions/${id}`, token)).body.approval).toEqual({ status: "required", expires_at: expiresAt, decided_at: null });

    expect((await decidePayment(w.ctx, id, "approved", "cli:test")).kind).toBe("decided");
    const after = (await w.get(`/v1/transactions/${id}`, token)).body.approval as { status: string; decided_at: string };
    expect(after).toMatchObject({ status: "approved", expires_at: expiresAt });
    expect(Date.parse(after.decided_at)).not.toBeNaN();
    expect(await events(id)).toEqual(["payment.approval_required", "payment.approved"]);
    expect(await w.settle(id)).toBe("completed");
  });

  test("behavior: denied shows denied with decided_at, the payment failed, and payment.denied is written", async () => {
    const paid = await w.post("/v1/pay", { recipient: randomAddress(), amount_usd: 3 }, token);
    const id = String(paid.body.id);
    await decidePayment(w.ctx, id, "denied", "cli:test");
    const t = (await w.get(`/v1/transactions/${id}`, token)).body;
    expect(t).toMatchObject({ status: "failed", failure_code: "approval_denied", approval: { status: "denied" } });
    expect(await events(id)).toEqual(["payment.approval_required", "payment.denied"]);
  });

  test("behavior: a payment below the threshold carries no approval", async () => {
    const paid = await w.post("/v1/pay", { recipient: randomAddress(), amount_usd: 0.5 }, token);
    expect(paid.status).toBe(201);
    expect(paid.body.approval).toBeUndefined();
    expect((await w.get(`/v1/transactions/${paid.body.id}`, token)).body.approval).toBeUndefined();
  });
});
