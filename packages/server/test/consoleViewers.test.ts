// Who may change a project through the console (services/console/viewers.ts), on real SQLite and PostgreSQL:
// the server's own rule, read again at every change, whatever the pages showed the viewer.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Viewer } from "@agentwallet/console";
import { authorizeChange } from "../src/services/console/viewers.ts";
import { updateControls } from "../src/services/spendingControls.ts";
import { issueToken } from "../src/services/tokens.ts";
import { createAdminCredential } from "../src/services/adminCredentials.ts";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";

describe.each(dialects)("console: who may change a project (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  const project = () => t.ctx.ledger.projects.create({ name: "p", plan: "free" });
  const token = async (projectId: string, permissions: ("read" | "pay" | "x402")[], controls?: { spending_limits: { amount_usd: number; interval: "daily" }[] }) =>
    issueToken(t.ctx, { projectId, permissions, mode: "test", ...(controls ? { controls } : {}) });
  // What the page thought of the viewer does not count: `manage` and `decide` are claimed true everywhere.
  const viewerOf = (tok: { id: string; project_id: string }, projectId = tok.project_id): Viewer => ({ kind: "token", projectId, tokenId: tok.id, permissions: ["read", "pay", "x402"], manage: true, decide: true });
  const refusal = { kind: "forbidden", code: "permission_denied" };
  // The page's claim of a role does not count either: every operator viewer below claims admin.
  const operator = async (role: "viewer" | "approver" | "admin"): Promise<Viewer & { kind: "operator" }> => {
    const c = await createAdminCredential(t.ctx, { name: `${role} laptop`, role });
    return { kind: "operator", credentialId: c.id, name: c.name, role: "admin", ip: "203.0.113.7" };
  };

  test("default: the operator is named by its credential's id, name and role; a full token without controls by its id and prefix", async () => {
    const p = await project();
    const full = await token(p.id, ["read", "pay", "x402"]);
    const admin = await operator("admin");
    await expect(authorizeChange(t.ctx, admin, p.id)).resolves.toEqual({ id: admin.credentialId, name: "admin laptop", role: "admin", ip: "203.0.113.7" });
    await expect(authorizeChange(t.ctx, viewerOf(full), p.id, "decide")).resolves.toEqual({ id: full.id, name: `token ${full.display_prefix}…`, role: null, ip: null });
  });

  test("error: an operator's role is read from its credential: a viewer changes nothing, an approver only decides", async () => {
    const p = await project();
    const viewer = await operator("viewer");
    const approver = await operator("approver");
    await expect(authorizeChange(t.ctx, viewer, p.id)).rejects.toMatchObject(refusal);
    await expect(authorizeChange(t.ctx, viewer, p.id, "decide")).rejects.toMatchObject(refusal);
    await expect(authorizeChange(t.ctx, approver, p.id)).rejects.toMatchObject({ ...refusal, detail: expect.stringContaining("needs admin") });
    await expect(authorizeChange(t.ctx, approver, p.id, "decide")).resolves.toMatchObject({ id: approver.credentialId, role: "approver" });
  });

  test("error: a token with fewer permissions, controls of its own, of another project, or revoked may not", async () => {
    const p = await project();
    const other = await project();
    const readOnly = await token(p.id, ["read"]);
    const limited = await token(p.id, ["read", "pay", "x402"], { spending_limits: [{ amount_usd: 5, interval: "daily" }] });
    const foreign = await token(other.id, ["read", "pay", "x402"]);
    const revoked = await token(p.id, ["read", "pay", "x402"]);
    await t.ctx.ledger.tokens.revoke(revoked.id);
    for (const tok of [readOnly, limited, revoked]) await expect(authorizeChange(t.ctx, viewerOf(tok), p.id)).rejects.toMatchObject(refusal);
    await expect(authorizeChange(t.ctx, viewerOf(foreign, p.id), p.id)).rejects.toMatchObject(refusal);
  });

  test("error: a project's own approval threshold leaves its decisions to the operator, not to its tokens", async () => {
    const p = await project();
    const full = await token(p.id, ["read", "pay", "x402"]);
    await updateControls(t.ctx, "project", p.id, { approval_above_usd: 10 });
    await expect(authorizeChange(t.ctx, viewerOf(full), p.id)).resolves.toMatchObject({ id: full.id });
    await expect(authorizeChange(t.ctx, viewerOf(full), p.id, "decide")).rejects.toMatchObject({ ...refusal, detail: expect.stringContaining("only the operator") });
    const admin = await operator("admin");
    await expect(authorizeChange(t.ctx, admin, p.id, "decide")).resolves.toMatchObject({ id: admin.credentialId });
  });
});
