// The audit log of child tokens, on real SQLite and PostgreSQL: creating a child through POST /v1/tokens and
// revoking one through DELETE /v1/tokens/{id} each write one entry, in the transaction of the change, naming
// the acting token (id, name, client address), the token changed and its state before and after; a refused
// creation or revocation writes none.
import { beforeAll, describe, expect, test } from "vitest";
import { createToken } from "../../src/services/tokens.ts";
import { listAudit } from "../../src/services/audit.ts";
import { displayPrefix } from "../../src/tokens.ts";
import { useTestApp } from "../support/context.ts";
import { dialects } from "../support/db.ts";

const CLIENT_IP = "198.51.100.7";

describe.each(dialects)("child token audit (%s)", (dialect) => {
  const { t, app } = useTestApp(dialect);
  let projectId: string;
  beforeAll(async () => {
    projectId = (await t.ctx.ledger.projects.create({ name: "audited tree", plan: "free" })).id;
  });

  const call = async (method: "POST" | "DELETE", url: string, token: string, payload?: object) => {
    const res = await app.inject({ method, url, remoteAddress: CLIENT_IP, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
    return { status: res.statusCode, body: res.json() };
  };
  const entries = async (action: string, targetId: string) => (await listAudit(t.ctx, { projectId, action, limit: 500 })).data.filter((e) => e.target_id === targetId);

  test("default: a child created through the API is audited with its parent as the actor, in the same transaction", async () => {
    const root = await createToken(t.ctx, { projectId, permissions: ["read", "pay", "delegate"], mode: "test", name: "planner" });
    const res = await call("POST", "/v1/tokens", root.token, { name: "researcher", permissions: ["pay", "delegate"], allowance_usd: 7, spending_controls: { spending_limits: [{ amount_usd: 3, interval: "daily" }] } });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    const [entry, ...more] = await entries("token.created", res.body.id);
    expect(more).toEqual([]);
    expect(entry).toMatchObject({
      actor: { id: root.id, name: "planner", role: null, ip: CLIENT_IP },
      project_id: projectId,
      before: null,
      after: { name: "researcher", display_prefix: res.body.display_prefix, permissions: ["pay", "delegate"], parent_id: root.id, depth: 1, allowance_micros: 7_000_000 },
    });
    expect(JSON.stringify(entry!.after)).toContain("3000000");
    // Written by the statement that wrote the row: the same instant, and never the secret.
    expect(entry!.at).toBe(res.body.created_at);
    expect(JSON.stringify(entry)).not.toContain(res.body.token.slice(12));
  });

  test("behavior: revoking the middle of a branch is one entry by the revoking token that lists the descendants it took", async () => {
    const root = await createToken(t.ctx, { projectId, permissions: ["read", "pay", "delegate"], mode: "test" });
    const mid = (await call("POST", "/v1/tokens", root.token, { name: "mid", permissions: ["pay", "delegate"] })).body;
    const leaf = (await call("POST", "/v1/tokens", mid.token, { name: "leaf", permissions: ["pay"] })).body;
    // The grandchild's creation names the middle token, which created it.
    expect((await entries("token.created", leaf.id))[0]!.actor).toEqual({ id: mid.id, name: "mid", role: null, ip: CLIENT_IP });
    const res = await call("DELETE", `/v1/tokens/${mid.id}`, root.token);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const [entry, ...more] = await entries("token.revoked", mid.id);
    expect(more).toEqual([]);
    // A token without a name is named by its display prefix.
    expect(entry).toMatchObject({ actor: { id: root.id, name: `token ${displayPrefix(root.token)}…`, role: null, ip: CLIENT_IP }, before: { revoked_at: null }, after: { revoked_at: res.body.revoked_at, descendants_revoked: [leaf.id] } });
    expect(await entries("token.revoked", leaf.id)).toEqual([]);
  });

  test("error: a refused creation or revocation writes no entry", async () => {
    const root = await createToken(t.ctx, { projectId, permissions: ["read", "pay", "delegate"], mode: "test", name: "narrow" });
    const before = (await listAudit(t.ctx, { projectId, limit: 500 })).data.length;
    expect((await call("POST", "/v1/tokens", root.token, { permissions: ["x402"] })).body.code).toBe("token_wider_than_parent");
    const child = (await call("POST", "/v1/tokens", root.token, { permissions: ["pay"] })).body;
    expect((await call("DELETE", `/v1/tokens/${child.id}`, root.token)).status).toBe(200);
    expect((await call("DELETE", `/v1/tokens/${child.id}`, root.token)).body.code).toBe("already_revoked");
    expect((await call("DELETE", "/v1/tokens/tok_nope", root.token)).body.code).toBe("token_not_found");
    // Only the one creation and the one revocation that happened.
    expect((await listAudit(t.ctx, { projectId, limit: 500 })).data.length).toBe(before + 2);
  });
});
