// The console's one-time views on real SQLite and PostgreSQL: what a form created (a new token, an
// endpoint's secret) is kept sealed, never in the clear, for the session that created it, and read once.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { consoleBackend } from "../src/http/console.ts";
import { createAdminCredential } from "../src/services/adminCredentials.ts";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { tableRows } from "../src/ledger/testing.ts";

const KEY = new Uint8Array(32).fill(9);

describe.each(dialects)("console one-time views (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  test("behavior: kept sealed for its session, shown once, to nobody else, not after it expires", async () => {
    const backend = consoleBackend(t.ctx, { webhookSecretKey: () => KEY });
    const project = await t.ctx.ledger.projects.create({ name: "p", plan: "free" });
    const admin = await createAdminCredential(t.ctx, { name: "views" });
    const mine = await backend.createSession({ kind: "operator", credentialId: admin.id });
    const theirs = await backend.createSession({ kind: "operator", credentialId: admin.id });
    const session = (s: { id: string; csrf: string; expiresAt: string }) => ({ ...s, viewer: { kind: "operator" as const, credentialId: admin.id, name: admin.name, role: "admin" as const } });
    const shown = { token: { id: "tok_1", token: "aw_test_secretpart0123456789" }, snippet: "{}" };

    const viewId = await backend.keepOneTimeView(session(mine), project.id, "token", shown);
    const rows = await tableRows(t.ctx.ledger, "console_one_time_views");
    expect(rows).toHaveLength(1);
    expect(JSON.stringify(rows)).not.toContain("secretpart");
    expect(JSON.stringify(rows)).not.toContain(viewId);

    // Another session, another project, another kind: nothing, and the view stays for its own session.
    expect(await backend.takeOneTimeView(session(theirs), project.id, "token", viewId)).toBeNull();
    expect(await backend.takeOneTimeView(session(mine), "prj_other", "token", viewId)).toBeNull();
    expect(await backend.takeOneTimeView(session(mine), project.id, "webhook", viewId)).toBeNull();
    expect(await backend.takeOneTimeView(session(mine), project.id, "token", viewId)).toEqual(shown);
    expect(await backend.takeOneTimeView(session(mine), project.id, "token", viewId)).toBeNull();

    // Another process of the deployment (another backend, the same key) opens a view; an expired one is pruned unread.
    const other = consoleBackend(t.ctx, { webhookSecretKey: () => KEY });
    const second = await backend.keepOneTimeView(session(mine), project.id, "webhook", { secret: "whsec_x" });
    expect(await other.takeOneTimeView(session(mine), project.id, "webhook", second)).toEqual({ secret: "whsec_x" });
    const third = await backend.keepOneTimeView(session(mine), project.id, "token", shown);
    await t.ctx.ledger.consoleSessions.prune(new Date(Date.now() + 6 * 60_000).toISOString());
    expect(await tableRows(t.ctx.ledger, "console_one_time_views")).toEqual([]);
    expect(await backend.takeOneTimeView(session(mine), project.id, "token", third)).toBeNull();
  });
});
