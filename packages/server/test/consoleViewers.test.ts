// Who may change a project through the console (services/console/viewers.ts), on real SQLite and PostgreSQL:
// the server's own rule, read again at every change, whatever the pages showed the viewer.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Viewer } from "@agentwallet/console";
import { authorizeChange } from "../src/services/console/viewers.ts";
import { updateControls } from "../src/services/spendingControls.ts";
import { issueToken } from "../src/services/tokens.ts";
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

  test("default: the operator is named by its credential; a full token without controls by its id and prefix", async () => {
    const p = await project();
    const full = await token(p.id, ["read", "pay", "x402"]);
    await expect(authorizeChange(t.ctx, { kind: "operator", credentialId: "adm_1" }, p.id)).resolves.toBe("operator adm_1");
    await expect(authorizeChange(t.ctx, viewerOf(full), p.id, "decide")).resolves.toBe(`token ${full.id} (${full.display_prefix}…)`);
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
    await expect(authorizeChange(t.ctx, viewerOf(full), p.id)).resolves.toContain(full.id);
    await expect(authorizeChange(t.ctx, viewerOf(full), p.id, "decide")).rejects.toMatchObject({ ...refusal, detail: expect.stringContaining("only the operator") });
    await expect(authorizeChange(t.ctx, { kind: "operator", credentialId: "adm_1" }, p.id, "decide")).resolves.toBe("operator adm_1");
  });
});
