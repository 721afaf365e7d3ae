// Roles and the audit log over the admin API, on real SQLite and PostgreSQL: a viewer reads and changes
// nothing, an approver also decides payments, an admin does everything; every change lands in the audit log,
// written with the change, with who (name, role, address), what and the state before and after; a refused
// change writes nothing; no entry can be updated; entries past their retention are pruned.
import { AuditList, ApprovalDecision, CreatedAdminToken } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseControls } from "../../src/domain/spending.ts";
import { createAdminCredential, revokeAdminCredential } from "../../src/services/adminCredentials.ts";
import { listAudit, pruneAudit } from "../../src/services/audit.ts";
import { buildApp, createTestContext, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { fundedProject, usdcPayment } from "../support/holds.ts";
import { disableWebhookEndpoint, rewriteAuditActor } from "../../src/ledger/testing.ts";

const USD = 1_000_000;
const PAYEE = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const CLIENT_IP = "203.0.113.9";
const CLI = { id: "cli:ops", name: "ops", role: null, ip: null };

describe.each(dialects)("admin roles and the audit log (%s)", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  const cred: Record<"viewer" | "approver" | "admin", Awaited<ReturnType<typeof createAdminCredential>>> = {} as never;
  const call = async (method: "GET" | "POST" | "PATCH" | "DELETE", url: string, credential: string, payload?: unknown) => {
    const res = await app.inject({ method, url, remoteAddress: CLIENT_IP, headers: { authorization: `Bearer ${credential}` }, ...(payload === undefined ? {} : { payload: payload as object }) });
    return { status: res.statusCode, body: res.json() };
  };
  /** The newest entry of an action on a target, as the admin API lists it. */
  const entryOf = async (action: string, targetId: string) => {
    const page = AuditList.parse((await call("GET", `/v1/admin/audit?action=${action}&limit=500`, cred.viewer.credential)).body);
    return page.data.filter((e) => e.target_id === targetId);
  };

  beforeAll(async () => {
    t = await createTestContext(dialect);
    t.ctx.webhookSecretKey = new Uint8Array(32).fill(3);
    app = buildApp(t.ctx);
    for (const role of ["viewer", "approver", "admin"] as const) cred[role] = await createAdminCredential(t.ctx, { name: `${role} laptop`, role }, CLI);
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  test("default: existing credentials are admin; the CLI creates one with a role, and the creation is audited with the CLI's user", async () => {
    expect([cred.viewer.role, cred.approver.role, cred.admin.role]).toEqual(["viewer", "approver", "admin"]);
    expect((await createAdminCredential(t.ctx, { name: "no role" })).role).toBe("admin");
    await expect(createAdminCredential(t.ctx, { name: "x", role: "root" })).rejects.toMatchObject({ code: "invalid_request" });
    const [created] = await entryOf("credential.created", cred.approver.id);
    expect(created).toMatchObject({ actor: CLI, project_id: null, before: null, after: { name: "approver laptop", role: "approver", display_prefix: cred.approver.display_prefix } });
  });

  test("behavior: a viewer reads everything and changes nothing; an approver decides but may not change controls; an admin may", async () => {
    const project = (await call("POST", "/v1/admin/projects", cred.admin.credential, { name: "roles" })).body as { id: string };
    const token = CreatedAdminToken.parse((await call("POST", `/v1/admin/projects/${project.id}/tokens`, cred.admin.credential, { permissions: ["read", "pay"] })).body);
    for (const who of [cred.viewer, cred.approver]) {
      for (const url of ["/v1/admin/projects", `/v1/admin/projects/${project.id}`, `/v1/admin/projects/${project.id}/tokens`, `/v1/admin/tokens/${token.id}/limits`, "/v1/admin/payments/pending", "/v1/admin/refusals", "/v1/admin/audit", `/v1/admin/projects/${project.id}/webhooks`]) {
        expect([who.role, url, (await call("GET", url, who.credential)).status]).toEqual([who.role, url, 200]);
      }
      const changes: [string, string, unknown][] = [
        ["POST", `/v1/admin/projects/${project.id}/pause`, undefined],
        ["PATCH", `/v1/admin/projects/${project.id}/controls`, { spending_limits: [{ amount_usd: 1, interval: "daily" }] }],
        ["PATCH", `/v1/admin/tokens/${token.id}/controls`, { spending_limits: [{ amount_usd: 1, interval: "daily" }] }],
        ["POST", `/v1/admin/projects/${project.id}/tokens`, { permissions: ["read"] }],
        ["POST", `/v1/admin/tokens/${token.id}/revoke`, undefined],
        ["POST", `/v1/admin/projects/${project.id}/webhooks`, { url: "http://127.0.0.1:9/hook" }],
        ["POST", "/v1/admin/projects", { name: "nope" }],
      ];
      for (const [method, url, body] of changes) {
        const res = await call(method as "POST", url, who.credential, body);
        expect([who.role, url, res.status, res.body.code]).toEqual([who.role, url, 403, "admin_role_insufficient"]);
      }
    }
    const viewerDecides = await call("POST", "/v1/admin/payments/txn_x/approve", cred.viewer.credential);
    expect([viewerDecides.status, viewerDecides.body.code]).toEqual([403, "admin_role_insufficient"]);
    expect((await call("POST", "/v1/admin/payments/txn_x/approve", cred.approver.credential)).body.code).toBe("payment_not_found");
    // Nothing the refused requests asked for happened, and nothing of them is in the log.
    expect((await t.ctx.ledger.tokens.get(token.id))).toMatchObject({ revoked_at: null, spending_controls: null });
    expect((await t.ctx.ledger.projects.get(project.id))?.paused).toBeFalsy();
    const all = AuditList.parse((await call("GET", `/v1/admin/audit?project_id=${project.id}`, cred.viewer.credential)).body).data;
    expect(all.map((e) => [e.action, e.actor.id])).toEqual([["token.created", cred.admin.id]]);
  });

  test("behavior: every change lands in the log with who, from where, and the state before and after", async () => {
    const a = cred.admin.credential;
    const project = (await call("POST", "/v1/admin/projects", a, { name: "audited" })).body as { id: string };
    const admin = { id: cred.admin.id, name: "admin laptop", role: "admin", ip: CLIENT_IP };

    const token = CreatedAdminToken.parse((await call("POST", `/v1/admin/projects/${project.id}/tokens`, a, { permissions: ["read", "pay"], spending_controls: { spending_limits: [{ amount_usd: 10, interval: "daily" }] } })).body);
    const [created] = await entryOf("token.created", token.id);
    expect(created).toMatchObject({ actor: admin, project_id: project.id, before: null, after: { display_prefix: token.display_prefix, permissions: ["read", "pay"], expires_at: null } });
    expect(JSON.stringify(created)).not.toContain(token.token.slice(12));

    await call("PATCH", `/v1/admin/tokens/${token.id}/controls`, a, { spending_limits: [{ amount_usd: 25, interval: "weekly" }] });
    const [changed] = await entryOf("token.controls_changed", token.id);
    expect(changed).toMatchObject({ actor: admin, project_id: project.id });
    expect(JSON.stringify(changed!.before)).toContain(String(10 * USD));
    expect(JSON.stringify(changed!.after)).toContain(String(25 * USD));
    expect(JSON.stringify(changed!.after)).not.toContain(String(10 * USD));

    await call("PATCH", `/v1/admin/projects/${project.id}/controls`, a, { approval_above_usd: 5 });
    const [projectControls] = await entryOf("project.controls_changed", project.id);
    expect(projectControls).toMatchObject({ actor: admin, before: { spending_controls: null } });
    expect(JSON.stringify(projectControls!.after)).toContain(String(5 * USD));

    await call("POST", `/v1/admin/projects/${project.id}/pause`, a);
    await call("POST", `/v1/admin/projects/${project.id}/resume`, a);
    expect(await entryOf("project.paused", project.id)).toMatchObject([{ actor: admin, before: { paused: false }, after: { paused: true } }]);
    expect(await entryOf("project.resumed", project.id)).toMatchObject([{ before: { paused: true }, after: { paused: false } }]);

    await call("POST", `/v1/admin/tokens/${token.id}/revoke`, a);
    expect((await call("POST", `/v1/admin/tokens/${token.id}/revoke`, a)).body.code).toBe("already_revoked");
    const revoked = await entryOf("token.revoked", token.id);
    expect(revoked).toMatchObject([{ actor: admin, before: { revoked_at: null }, after: { revoked_at: expect.any(String) } }]);

    const hookRes = await call("POST", `/v1/admin/projects/${project.id}/webhooks`, a, { url: "http://127.0.0.1:9/hook", events: ["payment.completed"] });
    expect(hookRes.status, JSON.stringify(hookRes.body)).toBe(201);
    const hook = hookRes.body as { id: string; secret: string };
    await disableWebhookEndpoint(t.ctx.ledger, hook.id, "2026-01-01T00:00:00.000Z", "failing");
    await call("POST", `/v1/admin/webhooks/${hook.id}/enable`, a);
    await call("DELETE", `/v1/admin/webhooks/${hook.id}`, a);
    expect(await entryOf("webhook.created", hook.id)).toMatchObject([{ actor: admin, before: null, after: { url: "http://127.0.0.1:9/hook", events: ["payment.completed"] } }]);
    expect(JSON.stringify(await entryOf("webhook.created", hook.id))).not.toContain(hook.secret);
    expect(await entryOf("webhook.enabled", hook.id)).toMatchObject([{ before: { disabled_at: "2026-01-01T00:00:00.000Z", disabled_reason: "failing" }, after: { disabled_at: null } }]);
    expect(await entryOf("webhook.deleted", hook.id)).toMatchObject([{ before: { deleted_at: null }, after: { deleted_at: expect.any(String) } }]);

    const other = await createAdminCredential(t.ctx, { name: "leaver", role: "viewer" }, CLI);
    await revokeAdminCredential(t.ctx, other.id, CLI);
    expect(await entryOf("credential.revoked", other.id)).toMatchObject([{ actor: CLI, before: { name: "leaver", role: "viewer", revoked_at: null }, after: { revoked_at: expect.any(String) } }]);
  });

  test("behavior: an approver's decision carries its name and reason on the payment and in the log; a second decision writes nothing", async () => {
    const projectId = await fundedProject(t.ctx);
    const token = CreatedAdminToken.parse((await call("POST", `/v1/admin/projects/${projectId}/tokens`, cred.admin.credential, { permissions: ["pay"], spending_controls: { approval_above_usd: 50 } })).body);
    const controls = { tokenId: token.id, token: parseControls((await t.ctx.ledger.tokens.get(token.id))!.spending_controls), project: null, recipientKey: `addr:${PAYEE.toLowerCase()}`, approvalTimeoutMs: 60_000 };
    const held = await t.ctx.ledger.payments.hold(usdcPayment(projectId, 60 * USD, USD, { controls }));
    const id = held.kind === "held" ? held.payment.id : "not held";

    const tooLong = await call("POST", `/v1/admin/payments/${id}/deny`, cred.approver.credential, { reason: "x".repeat(501) });
    expect([tooLong.status, tooLong.body.code]).toEqual([400, "invalid_request"]);
    const denied = ApprovalDecision.parse((await call("POST", `/v1/admin/payments/${id}/deny`, cred.approver.credential, { reason: "unknown merchant" })).body);
    expect(denied).toMatchObject({ decision: "denied", status: "failed", decided_by: cred.approver.id, decided_by_name: "approver laptop", reason: "unknown merchant" });
    expect((await t.ctx.ledger.payments.getPayment(id))).toMatchObject({ approvalDecidedByName: "approver laptop", approvalReason: "unknown merchant" });
    expect((await call("POST", `/v1/admin/payments/${id}/approve`, cred.admin.credential)).status).toBe(409);
    expect(await entryOf("approval.decided", id)).toMatchObject([
      { actor: { id: cred.approver.id, name: "approver laptop", role: "approver", ip: CLIENT_IP }, project_id: projectId, before: { approval: "awaiting" }, after: { approval: "denied", reason: "unknown merchant", amount_micros: 60 * USD, recipient: PAYEE } },
    ]);
  });

  test("error: no interface can change an entry: the database refuses an UPDATE", async () => {
    const [entry] = (await listAudit(t.ctx, { limit: 1 })).data;
    await expect(rewriteAuditActor(t.ctx.ledger, entry!.seq, "someone else")).rejects.toThrow(/never changed/);
    expect((await listAudit(t.ctx, { limit: 1 })).data[0]!.actor.name).toBe(entry!.actor.name);
  });

  test("behavior: pages go back by `before` without gaps, and entries past the retention are pruned", async () => {
    const first = AuditList.parse((await call("GET", "/v1/admin/audit?limit=3", cred.viewer.credential)).body);
    const second = AuditList.parse((await call("GET", `/v1/admin/audit?limit=3&before=${first.next_before}`, cred.viewer.credential)).body);
    const both = AuditList.parse((await call("GET", "/v1/admin/audit?limit=6", cred.viewer.credential)).body);
    expect([...first.data, ...second.data].map((e) => e.seq)).toEqual(both.data.map((e) => e.seq));
    expect((await call("GET", "/v1/admin/audit?limit=501", cred.viewer.credential)).body.code).toBe("invalid_request");

    const total = (await listAudit(t.ctx, { limit: 500 })).data.length;
    expect(await pruneAudit({ ...t.ctx, clock: () => new Date(Date.now() - 86_400_000) }, 1)).toBe(0);
    expect(await pruneAudit({ ...t.ctx, clock: () => new Date(Date.now() + 3 * 86_400_000) }, 1)).toBe(total);
    expect((await listAudit(t.ctx, {})).data).toEqual([]);
  });
});
