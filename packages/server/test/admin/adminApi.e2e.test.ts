// The admin API over real HTTP on real SQLite and PostgreSQL: an operator's admin credential (created by
// the CLI's service function, stored as a hash) manages projects, tokens and their spending controls,
// decides waiting payments (recording who and when) and reads refusals; a project token is refused there,
// and the admin credential is refused everywhere else. Every answer parses with its wire schema.
import { createHash } from "node:crypto";
import { AdminProject, AdminProjectList, AdminTokenList, ApprovalDecision, CreatedAdminToken, AdminToken, Limits, PendingApprovalList, RefusalList } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { parseControls } from "../../src/domain/spending.ts";
import { consoleBackend } from "../../src/http/console.ts";
import { createAdminCredential, revokeAdminCredential } from "../../src/services/adminCredentials.ts";
import { buildApp, createTestContext, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { tableRows } from "../../src/ledger/testing.ts";

const USD = 1_000_000;
const PAYEE = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe.each(dialects)("admin API (%s)", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let admin: Awaited<ReturnType<typeof createAdminCredential>>;
  const as = (credential: string) => ({ authorization: `Bearer ${credential}` });
  const call = async (method: "GET" | "POST" | "PATCH", url: string, credential: string, payload?: unknown) => {
    const res = await app.inject({ method, url, headers: as(credential), ...(payload === undefined ? {} : { payload: payload as object }) });
    return { status: res.statusCode, body: res.json() };
  };

  beforeAll(async () => {
    t = await createTestContext(dialect);
    app = buildApp(t.ctx);
    admin = await createAdminCredential(t.ctx, { name: "ops laptop" });
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  test("behavior: the credential is aw_admin_…, shown once and stored only as its SHA-256", async () => {
    expect(admin.credential).toMatch(/^aw_admin_[0-9A-Za-z]{38}$/);
    expect(admin).toMatchObject({ id: expect.stringMatching(/^adm_/), name: "ops laptop", display_prefix: admin.credential.slice(0, 13), state: "active" });
    const rows = await tableRows(t.ctx.ledger, "admin_credentials");
    expect(rows.map((r) => r.credential_hash)).toContain(createHash("sha256").update(admin.credential).digest("hex"));
    expect(JSON.stringify(rows)).not.toContain(admin.credential.slice(13));
  });

  test("behavior: projects, tokens with spending controls, limits and revocation, over the CLI's service functions", async () => {
    const created = await call("POST", "/v1/admin/projects", admin.credential, { name: "Agents", plan: "pro" });
    expect(created.status).toBe(201);
    const project = AdminProject.parse(created.body);
    expect(project).toMatchObject({ name: "Agents", plan: "pro", paused: false, spending_controls: null });
    expect(AdminProjectList.parse((await call("GET", "/v1/admin/projects", admin.credential)).body).data.map((p) => p.id)).toContain(project.id);
    expect((await call("POST", `/v1/admin/projects/${project.id}/pause`, admin.credential)).body.paused).toBe(true);
    expect((await call("POST", `/v1/admin/projects/${project.id}/resume`, admin.credential)).body.paused).toBe(false);

    const controls = { spending_limits: [{ amount_usd: 10, interval: "daily" }, { amount_usd: 2, interval: "per_payment" }], allowed_recipients: ["api.example.com", PAYEE], allowed_rails: ["x402", "usdc_transfer"], approval_above_usd: 5 };
    const issued = await call("POST", `/v1/admin/projects/${project.id}/tokens`, admin.credential, { permissions: ["read", "pay"], expires_in_seconds: 3600, spending_controls: controls });
    expect(issued.status).toBe(201);
    const token = CreatedAdminToken.parse(issued.body);
    expect(token.token).toMatch(/^aw_test_/);
    expect(token.spending_controls).toEqual({ ...controls, spending_limits: [controls.spending_limits[1], controls.spending_limits[0]], allowed_recipients: ["api.example.com", PAYEE.toLowerCase()], blocked_recipients: [] });
    const listed = AdminTokenList.parse((await call("GET", `/v1/admin/projects/${project.id}/tokens`, admin.credential)).body).data;
    expect(listed).toEqual([Object.fromEntries(Object.entries(token).filter(([k]) => k !== "token"))]);
    expect(JSON.stringify(listed)).not.toContain(token.token.slice(12));

    // An update changes only the fields it names.
    const updated = AdminToken.parse((await call("PATCH", `/v1/admin/tokens/${token.id}/controls`, admin.credential, { spending_limits: [{ amount_usd: 20, interval: "weekly" }], blocked_recipients: [{ routing_number: "021000021", account_number: "123456789" }] })).body);
    expect(updated.spending_controls).toMatchObject({ spending_limits: [{ amount_usd: 20, interval: "weekly" }], allowed_rails: ["x402", "usdc_transfer"], blocked_recipients: [expect.stringMatching(/6789/)] });
    expect(JSON.stringify(updated)).not.toContain("123456789");
    const projectControls = await call("PATCH", `/v1/admin/projects/${project.id}/controls`, admin.credential, { spending_limits: [{ amount_usd: 100, interval: "monthly" }] });
    expect(AdminProject.parse(projectControls.body).spending_controls?.spending_limits).toEqual([{ amount_usd: 100, interval: "monthly" }]);

    // The token's limits as the operator sees them are what the token itself reads from GET /v1/limits.
    const limits = Limits.parse((await call("GET", `/v1/admin/tokens/${token.id}/limits`, admin.credential)).body);
    expect(limits.windows.map((w) => [w.scope, w.interval, w.limit_usd, w.spent_usd, w.remaining_usd])).toEqual([["token", "weekly", 20, 0, 20], ["project", "monthly", 100, 0, 100]]);
    expect((await call("GET", "/v1/limits", token.token)).body).toEqual(limits);

    // Refusals of the service's own rules, with their codes.
    const bad = await call("PATCH", `/v1/admin/tokens/${token.id}/controls`, admin.credential, { spending_limits: [{ amount_usd: 1, interval: "hourly" }] });
    expect([bad.status, bad.body.code]).toEqual([400, "invalid_request"]);
    expect(bad.body.detail).toMatch(/spending_limits\.0\.interval/);
    const host = await call("PATCH", `/v1/admin/tokens/${token.id}/controls`, admin.credential, { allowed_recipients: ["not a host"] });
    expect([host.status, host.body.code]).toEqual([400, "invalid_request"]);
    const missing = await call("POST", "/v1/admin/projects/prj_missing/tokens", admin.credential, { permissions: ["read"] });
    expect([missing.status, missing.body.code]).toEqual([404, "project_not_found"]);
    expect((await call("GET", "/v1/admin/tokens/tok_missing/limits", admin.credential)).body.code).toBe("token_not_found");

    const revoked = await call("POST", `/v1/admin/tokens/${token.id}/revoke`, admin.credential);
    expect(AdminToken.parse(revoked.body).state).toBe("revoked");
    expect((await call("GET", "/v1/balance", token.token)).status).toBe(401);
    expect((await call("POST", `/v1/admin/tokens/${token.id}/revoke`, admin.credential)).body.code).toBe("already_revoked");
  });

  test("behavior: pending payments are approved or denied once, with who and when recorded; refusals are listed", async () => {
    const project = AdminProject.parse((await call("POST", "/v1/admin/projects", admin.credential, { name: "approvals" })).body);
    const deposit = { chain: "base", txHash: `0x${project.id}`, logIndex: 0 };
    await t.ctx.ledger.deposits.recordSeen({ ...deposit, projectId: project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1_000 * USD, blockNumber: 1, blockHash: "0xh" });
    await t.ctx.ledger.deposits.credit(deposit);
    const token = CreatedAdminToken.parse((await call("POST", `/v1/admin/projects/${project.id}/tokens`, admin.credential, { permissions: ["pay"], spending_controls: { approval_above_usd: 50, spending_limits: [{ amount_usd: 100, interval: "per_payment" }] } })).body);
    const controls = { tokenId: token.id, token: parseControls((await t.ctx.ledger.tokens.get(token.id))!.spending_controls), project: null, recipientKey: `addr:${PAYEE.toLowerCase()}`, approvalTimeoutMs: 60_000 };
    const held = await Promise.all([60, 70].map((usd) => t.ctx.ledger.payments.hold(usdcPayment(project.id, usd * USD, USD, { controls }))));
    const [a, b] = held.map((h) => (h.kind === "held" ? h.payment.id : "not held"));
    expect((await t.ctx.ledger.payments.hold(usdcPayment(project.id, 150 * USD, USD, { controls }))).kind).toBe("refused");

    const pending = PendingApprovalList.parse((await call("GET", `/v1/admin/payments/pending?project_id=${project.id}`, admin.credential)).body).data;
    expect(pending.map((p) => [p.id, p.amount_usd, p.token_id]).sort((x, y) => Number(x[1]) - Number(y[1]))).toEqual([[a, 60, token.id], [b, 70, token.id]]);
    const approved = await call("POST", `/v1/admin/payments/${a}/approve`, admin.credential);
    expect(ApprovalDecision.parse(approved.body)).toEqual({ id: a, decision: "approved", status: "pending", decided_by: admin.id, decided_by_name: "ops laptop", decided_at: expect.any(String), reason: null });
    const again = await call("POST", `/v1/admin/payments/${a}/deny`, admin.credential);
    expect([again.status, again.body.code]).toEqual([409, "not_awaiting_approval"]);
    expect(again.body.detail).toContain(`approved already by ${admin.id}`);
    const denied = ApprovalDecision.parse((await call("POST", `/v1/admin/payments/${b}/deny`, admin.credential)).body);
    expect([denied.status, denied.decided_by]).toEqual(["failed", admin.id]);
    expect((await call("POST", "/v1/admin/payments/pay_missing/approve", admin.credential)).body.code).toBe("payment_not_found");
    expect(PendingApprovalList.parse((await call("GET", `/v1/admin/payments/pending?project_id=${project.id}`, admin.credential)).body).data).toEqual([]);
    // Denied: credited back; only the approved one (60 + 1 fee) is still held.
    expect(Number((await t.ctx.ledger.balances.get(project.id))!.available_micros)).toBe(1_000 * USD - 61 * USD);
    expect((await t.ctx.ledger.verify()).problems).toEqual([]);

    const refusals = RefusalList.parse((await call("GET", `/v1/admin/refusals?project_id=${project.id}&limit=10`, admin.credential)).body).data;
    expect(refusals.map((r) => [r.code, r.token_id, r.amount_usd])).toEqual([["spending_limit_exceeded", token.id, 150]]);
    expect((await call("GET", "/v1/admin/refusals?limit=0", admin.credential)).body.code).toBe("invalid_request");
  });

  test("error: a project token is refused by the admin API, the admin credential everywhere else; a revoked credential is refused", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "q", plan: "free" });
    const token = CreatedAdminToken.parse((await call("POST", `/v1/admin/projects/${project.id}/tokens`, admin.credential, { permissions: ["read", "pay", "x402"] })).body).token;
    const withToken = await call("GET", "/v1/admin/projects", token);
    expect([withToken.status, withToken.body.code]).toEqual([403, "admin_credential_required"]);
    const none = await app.inject({ method: "GET", url: "/v1/admin/projects" });
    expect([none.statusCode, none.json().code]).toEqual([401, "unauthorized"]);
    // One character changed (never to itself: a credential may end in the character put there).
    const tampered = `${admin.credential.slice(0, -1)}${admin.credential.endsWith("x") ? "y" : "x"}`;
    expect((await call("GET", "/v1/admin/projects", tampered)).status).toBe(401);
    for (const [method, url, payload] of [["GET", "/v1/balance", undefined], ["GET", "/v1/limits", undefined], ["POST", "/v1/pay", { recipient: PAYEE, amount_usd: 1 }]] as const) {
      const r = await call(method, url, admin.credential, payload);
      expect([r.status, r.body.code], url).toEqual([403, "project_token_required"]);
    }
    const other = await createAdminCredential(t.ctx, {});
    // The console's operator session names the credential: revoking it ends the session.
    const backend = consoleBackend(t.ctx, {});
    const session = await backend.createSession({ kind: "operator", credentialId: (await backend.verifyAdminCredential(other.credential))! });
    expect((await backend.getSession(session.id))?.viewer).toEqual({ kind: "operator", credentialId: other.id, name: other.name, role: "admin" });
    await revokeAdminCredential(t.ctx, other.id);
    expect(await backend.getSession(session.id)).toBeNull();
    const revoked = await call("GET", "/v1/admin/projects", other.credential);
    expect([revoked.status, revoked.body.code]).toEqual([401, "unauthorized"]);
    expect(revoked.body.detail).toMatch(/revoked/);
    // The request log names the credential by its id, never its text.
    expect(t.logs.join("")).toContain(`"admin_id":"${admin.id}"`);
    expect(t.logs.join("")).not.toContain(admin.credential);
  });
});
