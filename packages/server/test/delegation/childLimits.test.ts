// GET /v1/limits of a child token on real SQLite and PostgreSQL: besides its own windows and its project's,
// its allowance and every ancestor's windows and allowances, each read from the counter the hold moves, so
// what it shows is what refuses a payment. An ancestor reads the same answer at GET /v1/tokens/{id}/limits.
import { describe, expect, test } from "vitest";
import { createToken } from "../../src/services/tokens.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { useTestApp } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { holdByToken } from "../support/holds.ts";
import { setAvailable } from "../../src/ledger/testing.ts";

const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe.each(dialects)("a child token's limits (%s)", (dialect) => {
  const { t, app } = useTestApp(dialect);

  const call = (method: "GET" | "POST", url: string, token: string, payload?: object) =>
    app.inject({ method, url, headers: { authorization: `Bearer ${token}`, ...(payload ? { "content-type": "application/json" } : {}) }, ...(payload ? { payload } : {}) });

  const pay = (tokenId: string, usd: number) => holdByToken(t.ctx, tokenId, usd, RECIPIENT);

  test("behavior: a grandchild sees its own window, its allowance, its parent's allowance, the root's daily limit and the project's weekly one, spent as the holds counted", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "p", plan: "free" });
    await setAvailable(t.ctx.ledger, project.id, 1_000_000_000);
    await t.ctx.ledger.tokens.setSpendingControls("project", project.id, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 100, interval: "weekly" }] }, new Uint8Array(32))));
    const root = await createToken(t.ctx, { projectId: project.id, permissions: ["read", "pay", "delegate"], mode: "test", name: "planner" });
    await t.ctx.ledger.tokens.setSpendingControls("token", root.id, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 10, interval: "daily" }] }, new Uint8Array(32))));
    const mid = (await call("POST", "/v1/tokens", root.token, { name: "researcher", permissions: ["read", "pay", "delegate"], allowance_usd: 4 })).json();
    const leaf = (await call("POST", "/v1/tokens", mid.token, { name: "fetcher", permissions: ["read", "pay"], allowance_usd: 3, spending_controls: { spending_limits: [{ amount_usd: 2, interval: "daily" }] } })).json();
    expect(leaf.depth, JSON.stringify(leaf)).toBe(2);

    // The root pays 5, the researcher 1, the fetcher 1.5: each counts at its own level and every level above.
    for (const [id, usd] of [[root.id, 5], [mid.id, 1], [leaf.id, 1.5]] as const) expect((await pay(id, usd)).kind).toBe("held");

    const res = await call("GET", "/v1/limits", leaf.token);
    expect(res.statusCode, res.body).toBe(200);
    const windows = res.json().windows.map((w: Record<string, unknown>) => ({ scope: w.scope, token_id: w.token_id, interval: w.interval, limit_usd: w.limit_usd, spent_usd: w.spent_usd, remaining_usd: w.remaining_usd }));
    // The researcher inherited the root's daily 10 (a limit left out is the parent's); the fetcher set its own 2.
    expect(windows).toEqual([
      { scope: "token", token_id: leaf.id, interval: "daily", limit_usd: 2, spent_usd: 1.5, remaining_usd: 0.5 },
      { scope: "allowance", token_id: leaf.id, interval: "all_time", limit_usd: 3, spent_usd: 1.5, remaining_usd: 1.5 },
      { scope: "ancestor", token_id: mid.id, interval: "daily", limit_usd: 10, spent_usd: 2.5, remaining_usd: 7.5 },
      { scope: "ancestor_allowance", token_id: mid.id, interval: "all_time", limit_usd: 4, spent_usd: 2.5, remaining_usd: 1.5 },
      { scope: "ancestor", token_id: root.id, interval: "daily", limit_usd: 10, spent_usd: 7.5, remaining_usd: 2.5 },
      { scope: "project", token_id: undefined, interval: "weekly", limit_usd: 100, spent_usd: 7.5, remaining_usd: 92.5 },
    ]);
    // What it shows is what refuses: 0.6 is above the fetcher's 0.5 left today; 0.5 fits every level.
    expect((await pay(leaf.id, 0.6)).kind).toBe("refused");
    expect((await pay(leaf.id, 0.5)).kind).toBe("held");
    // The researcher's allowance now has 1 left: its own 1.5 payment is refused by it, 1 fits.
    expect((await pay(mid.id, 1.5)).kind).toBe("refused");

    // The root reads the same answer for its grandchild, and the admin view agrees.
    const own = (await call("GET", "/v1/limits", leaf.token)).json();
    const fromRoot = await call("GET", `/v1/tokens/${leaf.id}/limits`, root.token);
    expect(fromRoot.statusCode, fromRoot.body).toBe(200);
    expect(fromRoot.json()).toEqual(own);
    expect(own.windows.find((w: { scope: string }) => w.scope === "ancestor_allowance")).toMatchObject({ spent_usd: 3, remaining_usd: 1 });
  });

  test("default: an operator's token without allowance or parent shows only token and project windows, as before", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "p", plan: "free" });
    const root = await createToken(t.ctx, { projectId: project.id, permissions: ["read"], mode: "test" });
    await t.ctx.ledger.tokens.setSpendingControls("token", root.id, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 10, interval: "monthly" }] }, new Uint8Array(32))));
    const res = await call("GET", "/v1/limits", root.token);
    expect(res.json().windows.map((w: { scope: string; token_id?: string }) => [w.scope, w.token_id])).toEqual([["token", root.id]]);
  });
});
