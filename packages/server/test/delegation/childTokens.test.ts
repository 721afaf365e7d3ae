// Child tokens through the API on real SQLite and PostgreSQL: a token with `delegate` creates children no
// wider than itself in any dimension (table-driven over every control), sees and revokes only its own
// branch, and a revoked ancestor stops every descendant at its next request.
import { readFileSync } from "node:fs";
import { beforeAll, describe, expect, test } from "vitest";
import type { AppContext } from "../../src/context.ts";
import { createToken } from "../../src/services/tokens.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { buildApp, createTestContext, useTestApp } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { setTokenEnd } from "../../src/ledger/testing.ts";

const KEY = new Uint8Array(32);
const ADDR = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const OTHER = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65";

/** The parent of the table: every control set, so each can be widened. */
const PARENT_CONTROLS = {
  spending_limits: [
    { amount_usd: 2, interval: "per_payment" as const },
    { amount_usd: 10, interval: "daily" as const },
    { amount_usd: 40, interval: "weekly" as const },
    { amount_usd: 100, interval: "monthly" as const },
    { amount_usd: 500, interval: "all_time" as const },
  ],
  allowed_recipients: ["api.example.com", "*.example.org", ADDR],
  blocked_recipients: ["bad.example.org"],
  allowed_rails: ["x402" as const, "usdc_transfer" as const],
  approval_above_usd: 1,
};

describe.each(dialects)("child tokens (%s)", (dialect) => {
  const { t, app } = useTestApp(dialect);
  let projectId: string;
  beforeAll(async () => {
    projectId = (await t.ctx.ledger.projects.create({ name: "p", plan: "free" })).id;
  });

  async function rootToken(ctx: AppContext, opts: { permissions?: ("read" | "pay" | "x402" | "delegate")[]; controls?: object; expiresInMs?: number; allowance?: number } = {}) {
    const created = await createToken(ctx, { projectId, permissions: opts.permissions ?? ["read", "pay", "x402", "delegate"], mode: "test", expiresInMs: opts.expiresInMs, name: "planner" });
    if (opts.controls) await ctx.ledger.tokens.setSpendingControls("token", created.id, controlsColumn(parseControlsInput(opts.controls, KEY)));
    return created;
  }
  const call = (method: "GET" | "POST" | "DELETE", url: string, token: string, payload?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(payload ? { "content-type": "application/json" } : {}) }, ...(payload ? { payload } : {}) });
  const child = (token: string, body: object) => call("POST", "/v1/tokens", token, body);

  test("default: a child is created with its name, parent, depth and inherited controls; its secret is shown once", async () => {
    const root = await rootToken(t.ctx, { controls: PARENT_CONTROLS });
    const res = await child(root.token, { name: "researcher 1", permissions: ["read", "pay"], allowance_usd: 5 });
    expect(res.statusCode, res.body).toBe(201);
    const body = res.json();
    expect(body).toMatchObject({ name: "researcher 1", parent_id: root.id, depth: 1, allowance_usd: 5, permissions: ["read", "pay"], state: "active", spent_usd: 0 });
    expect(body.token).toMatch(/^aw_test_/);
    // Nothing given: every control is the parent's.
    expect(body.spending_controls.spending_limits).toHaveLength(5);
    expect(body.spending_controls.allowed_rails).toEqual(["x402", "usdc_transfer"]);
    expect(body.spending_controls.approval_above_usd).toBe(1);
    const listed = (await call("GET", "/v1/tokens", root.token)).json();
    expect(listed.data.map((d: { id: string }) => d.id)).toEqual([body.id]);
    expect(listed.data[0].token).toBeUndefined();
    // The child authenticates and reads its own limits, its allowance among them.
    const limits = await call("GET", "/v1/limits", body.token);
    expect(limits.statusCode).toBe(200);
    // The operator's list shows the name and the parent too.
    expect((await t.ctx.ledger.tokens.list(projectId)).find((r) => r.id === body.id)).toMatchObject({ name: "researcher 1", parent_id: root.id, depth: 1 });
  });

  // Each row widens the child in one dimension over PARENT_CONTROLS (or the parent's permissions and expiry).
  const wider: [string, object, RegExp][] = [
    ["per_payment above the parent's", { spending_controls: { spending_limits: [{ amount_usd: 3, interval: "per_payment" }] } }, /per_payment limit 3\.000000 USD is above/],
    ["daily above the parent's", { spending_controls: { spending_limits: [{ amount_usd: 11, interval: "daily" }] } }, /daily limit 11\.000000 USD is above/],
    ["weekly above the parent's", { spending_controls: { spending_limits: [{ amount_usd: 41, interval: "weekly" }] } }, /weekly limit/],
    ["monthly above the parent's", { spending_controls: { spending_limits: [{ amount_usd: 101, interval: "monthly" }] } }, /monthly limit/],
    ["all_time above the parent's", { spending_controls: { spending_limits: [{ amount_usd: 501, interval: "all_time" }] } }, /all_time limit/],
    ["an allowance above the parent's", { allowance_usd: 21 }, /allowance_usd: a child may spend at most 20\.000000 USD/],
    ["an allow-list lifted", { spending_controls: { allowed_recipients: null } }, /allowed_recipients: this token may pay only/],
    ["a host outside the allow-list", { spending_controls: { allowed_recipients: ["api.example.com", "evil.example.net"] } }, /evil\.example\.net is not on this token's allow-list/],
    ["an address outside the allow-list", { spending_controls: { allowed_recipients: [OTHER] } }, /is not on this token's allow-list/],
    ["a block lifted", { spending_controls: { blocked_recipients: [] } }, /blocked_recipients: this token blocks bad\.example\.org/],
    ["every rail", { spending_controls: { allowed_rails: null } }, /allowed_rails: .* may not pay by every rail/],
    ["a rail the parent lacks", { spending_controls: { allowed_rails: ["x402", "fiat"] } }, /may not pay by fiat/],
    ["no approval threshold", { spending_controls: { approval_above_usd: null } }, /approval_above_usd: .*none/],
    ["a looser approval threshold", { spending_controls: { approval_above_usd: 1.5 } }, /approval_above_usd/],
    ["an expiry after the parent's", { expires_in_seconds: 7_200 }, /expires_in_seconds: this token expires at/],
  ];
  test.each(wider)("error: a child with %s is refused (403 token_wider_than_parent) and nothing is created", async (_name, extra, detail) => {
    const root = await rootToken(t.ctx, { permissions: ["read", "pay", "x402", "delegate"], controls: PARENT_CONTROLS, expiresInMs: 3_600_000 });
    await t.ctx.ledger.tokens.setSpendingControls("token", root.id, controlsColumn(parseControlsInput(PARENT_CONTROLS, KEY)));
    // The allowance row needs a parent with an allowance: a child of the root with 20 USD.
    const mid = (await child(root.token, { name: "mid", permissions: ["read", "pay", "x402", "delegate"], allowance_usd: 20 })).json();
    expect(mid.token).toBeDefined();
    const res = await child(mid.token, { permissions: ["read", "pay", "x402"], ...extra });
    const body = res.json();
    expect(res.statusCode, res.body).toBe(403);
    expect(body.code).toBe("token_wider_than_parent");
    expect(body.detail).toMatch(detail);
    expect((await call("GET", "/v1/tokens", mid.token)).json().data).toEqual([]);
  });

  test("behavior: the README's \"Let an agent hand out budgets\" request creates the child it describes", async () => {
    const readme = readFileSync(new URL("../../../../README.md", import.meta.url), "utf8");
    const start = readme.indexOf("## Let an agent hand out budgets");
    const section = readme.slice(start, readme.indexOf("\n## ", start + 1));
    const body = JSON.parse(/-d '(\{.*\})'/.exec(section)![1]!);
    const root = await rootToken(t.ctx, { controls: { spending_limits: [{ amount_usd: 10, interval: "daily" }] } });
    const res = await child(root.token, body);
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json()).toMatchObject({ name: "researcher 1", parent_id: root.id, depth: 1, allowance_usd: 5 });
    expect((await call("GET", `/v1/tokens/${res.json().id}/limits`, root.token)).statusCode).toBe(200);
    expect((await call("DELETE", `/v1/tokens/${res.json().id}`, root.token)).json().state).toBe("revoked");
  });

  test("error: a permission beyond the parent's (x402 from a read,pay,delegate token) is refused", async () => {
    const root = await rootToken(t.ctx, { permissions: ["read", "pay", "delegate"] });
    const res = await child(root.token, { permissions: ["read", "x402"] });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toMatchObject({ code: "token_wider_than_parent" });
    expect(res.json().detail).toMatch(/may not have x402/);
  });

  test("behavior: a child within the parent in every dimension is created", async () => {
    const root = await rootToken(t.ctx, { controls: PARENT_CONTROLS, expiresInMs: 3_600_000 });
    const res = await child(root.token, {
      permissions: ["pay", "x402"],
      expires_in_seconds: 600,
      allowance_usd: 5,
      spending_controls: { spending_limits: [{ amount_usd: 1, interval: "per_payment" }, { amount_usd: 5, interval: "daily" }], allowed_recipients: ["a.example.org"], blocked_recipients: ["bad.example.org", "worse.example.org"], allowed_rails: ["x402"], approval_above_usd: 0.5 },
    });
    expect(res.statusCode, res.body).toBe(201);
    expect(res.json().spending_controls.spending_limits.map((l: { interval: string }) => l.interval).sort()).toEqual(["all_time", "daily", "monthly", "per_payment", "weekly"]);
  });

  test("error: without delegate a token cannot create, list or revoke (403 permission_denied)", async () => {
    const root = await rootToken(t.ctx, { permissions: ["read", "pay"] });
    for (const res of [await child(root.token, { permissions: ["read"] }), await call("GET", "/v1/tokens", root.token), await call("DELETE", "/v1/tokens/tok_x", root.token)]) {
      expect(res.statusCode).toBe(403);
      expect(res.json().code).toBe("permission_denied");
    }
  });

  test("error: depth is bounded (TOKEN_DEPTH_MAX, default 3): delegate is refused at the last level, and a token there cannot create", async () => {
    const root = await rootToken(t.ctx);
    const d1 = (await child(root.token, { permissions: ["read", "pay", "delegate"] })).json();
    const d2 = (await child(d1.token, { permissions: ["read", "pay", "delegate"] })).json();
    expect(d2.depth).toBe(2);
    const refused = await child(d2.token, { permissions: ["read", "delegate"] });
    expect(refused.statusCode).toBe(403);
    expect(refused.json().code).toBe("delegation_depth_exceeded");
    const d3 = (await child(d2.token, { permissions: ["read"] })).json();
    expect(d3.depth).toBe(3);
    expect((await child(d3.token, { permissions: ["read"] })).json().code).toBe("permission_denied");
  });

  test("behavior: a token sees and revokes only its own branch; a sibling's id answers 404 token_not_found", async () => {
    const root = await rootToken(t.ctx);
    const a = (await child(root.token, { name: "a", permissions: ["read", "pay", "delegate"] })).json();
    const b = (await child(root.token, { name: "b", permissions: ["read", "pay", "delegate"] })).json();
    const a1 = (await child(a.token, { name: "a1", permissions: ["read"] })).json();
    const b1 = (await child(b.token, { name: "b1", permissions: ["read"] })).json();
    expect((await call("GET", "/v1/tokens", root.token)).json().data.map((d: { name: string }) => d.name)).toEqual(["a", "b", "a1", "b1"]);
    expect((await call("GET", "/v1/tokens", a.token)).json().data.map((d: { name: string }) => d.name)).toEqual(["a1"]);
    for (const id of [b.id, b1.id, root.id, a.id]) {
      const del = await call("DELETE", `/v1/tokens/${id}`, a.token);
      expect(del.statusCode).toBe(404);
      expect(del.json().code).toBe("token_not_found");
      expect((await call("GET", `/v1/tokens/${id}/limits`, a.token)).statusCode).toBe(404);
    }
    expect((await call("GET", `/v1/tokens/${a1.id}/limits`, a.token)).statusCode).toBe(200);
    // Nothing of b's branch changed.
    expect((await call("GET", "/v1/balance", b1.token)).statusCode).toBe(200);
  });

  test("behavior: revoking a token revokes every descendant at once; the next request of each is 401", async () => {
    const root = await rootToken(t.ctx);
    const a = (await child(root.token, { permissions: ["read", "pay", "delegate"] })).json();
    const a1 = (await child(a.token, { permissions: ["read", "delegate"] })).json();
    const a2 = (await child(a1.token, { permissions: ["read"] })).json();
    const sibling = (await child(root.token, { permissions: ["read"] })).json();
    for (const tok of [a, a1, a2]) expect((await call("GET", "/v1/balance", tok.token)).statusCode).toBe(200);
    const del = await call("DELETE", `/v1/tokens/${a.id}`, root.token);
    expect(del.statusCode, del.body).toBe(200);
    expect(del.json()).toMatchObject({ id: a.id, state: "revoked" });
    for (const tok of [a, a1, a2]) {
      const res = await call("GET", "/v1/balance", tok.token);
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe("unauthorized");
    }
    expect((await call("GET", "/v1/balance", sibling.token)).statusCode).toBe(200);
    const states = Object.fromEntries((await call("GET", "/v1/tokens", root.token)).json().data.map((d: { id: string; state: string }) => [d.id, d.state]));
    expect(states).toEqual({ [a.id]: "revoked", [a1.id]: "revoked", [a2.id]: "revoked", [sibling.id]: "active" });
    // Revoked again: 400 already_revoked.
    expect((await call("DELETE", `/v1/tokens/${a1.id}`, root.token)).json().code).toBe("already_revoked");
  });

  test("behavior: an operator's revocation of the root stops its descendants too", async () => {
    const root = await rootToken(t.ctx);
    const a = (await child(root.token, { permissions: ["read"] })).json();
    await t.ctx.ledger.tokens.revoke(root.id);
    expect((await call("GET", "/v1/balance", a.token)).statusCode).toBe(401);
  });

  test("error: a token whose ancestor alone was revoked or has expired is refused at its next request, naming that ancestor", async () => {
    const root = await rootToken(t.ctx);
    const a = (await child(root.token, { permissions: ["read", "delegate"] })).json();
    const a1 = (await child(a.token, { permissions: ["read"] })).json();
    const refusal = async () => {
      const res = await call("GET", "/v1/balance", a1.token);
      expect(res.statusCode, res.body).toBe(401);
      return res.json().detail as string;
    };
    // The grandchild's own row stays active: only the lookup of its ancestors can refuse it.
    await setTokenEnd(t.ctx.ledger, a.id, { revoked_at: new Date().toISOString() });
    expect(await refusal()).toContain(`its ancestor token ${a.id} was revoked`);
    await setTokenEnd(t.ctx.ledger, a.id, { revoked_at: null });
    expect((await call("GET", "/v1/balance", a1.token)).statusCode).toBe(200);
    await setTokenEnd(t.ctx.ledger, root.id, { expires_at: new Date(Date.now() - 1000).toISOString() });
    expect(await refusal()).toContain(`ancestor token ${root.id} expired`);
  });

  test("error: at most TOKEN_CHILDREN_MAX active children (403 child_tokens_limit)", async () => {
    const small = await createTestContext(dialect, { env: { TOKEN_CHILDREN_MAX: "2" } });
    const smallApp = buildApp(small.ctx);
    try {
      const p = await small.ctx.ledger.projects.create({ name: "p", plan: "free" });
      const root = await createToken(small.ctx, { projectId: p.id, permissions: ["read", "delegate"], mode: "test" });
      const make = () => smallApp.inject({ method: "POST", url: "/v1/tokens", headers: { authorization: `Bearer ${root.token}`, "content-type": "application/json" }, payload: { permissions: ["read"] } });
      expect((await make()).statusCode).toBe(201);
      expect((await make()).statusCode).toBe(201);
      const third = await make();
      expect(third.statusCode).toBe(403);
      expect(third.json().code).toBe("child_tokens_limit");
    } finally {
      await smallApp.close();
      await small.close();
    }
  });
});
