/**
 * The Agents page's tree of tokens in a real browser (Debian's Chromium via playwright-core) against a real
 * sandbox server (real SQLite, real local chain, a real deposit): a depth-3 tree created through the API, with
 * a score of siblings, payments by the grandchild, each token's numbers checked against its own
 * `GET /v1/limits`; revoking the middle token from the page (asked first, naming the grandchild) refuses the
 * grandchild's next request; no serious or critical axe-core violation at 375 px or at desktop width.
 */
import { describe, expect, it } from "vitest";
import { createAdminCredential } from "../../server/src/services/adminCredentials.ts";
import { poll } from "../../server/test/support/poll.ts";
import { expectAccessible } from "./support/browser.ts";
import { useServerAndBrowser } from "./support/serverAndBrowser.ts";
import { usdText } from "../src/pages.ts";

const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
/** Siblings beside the branch under test, so the page is read with dozens of tokens. */
const SIBLINGS = 20;

const { server, browser } = useServerAndBrowser();

async function api(method: "GET" | "POST", path: string, token: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

type Window = { scope: string; token_id?: string; interval: string; limit_usd: number; spent_usd: number; remaining_usd: number };

describe("console agents tree", () => {
  it("shows a depth-3 tree with each token's spend as its GET /v1/limits gives it, and revoking the middle token stops the grandchild", async () => {
    // The tree, through the API: root (operator's) → planner → researcher, and siblings of planner.
    const root = await server.createToken(["read", "pay", "delegate"]);
    const planner = (await api("POST", "/v1/tokens", root, { name: "planner", permissions: ["read", "pay", "delegate"], allowance_usd: 20, spending_controls: { spending_limits: [{ amount_usd: 15, interval: "daily" }] } })).body;
    const researcher = (await api("POST", "/v1/tokens", planner.token as string, { name: "researcher", permissions: ["read", "pay"], allowance_usd: 8, spending_controls: { spending_limits: [{ amount_usd: 5, interval: "daily" }] } })).body;
    expect([planner.depth, researcher.depth, researcher.parent_id], JSON.stringify([planner, researcher])).toEqual([1, 2, planner.id]);
    for (let i = 1; i <= SIBLINGS; i++) expect((await api("POST", "/v1/tokens", root, { name: `worker ${i}`, permissions: ["read"], allowance_usd: 1 })).status).toBe(201);

    // The grandchild pays twice, and is refused once by its own daily limit.
    await server.fund(50_000_000n);
    const paid = [await api("POST", "/v1/pay", researcher.token as string, { recipient: RECIPIENT, amount_usd: 2 }), await api("POST", "/v1/pay", researcher.token as string, { recipient: RECIPIENT, amount_usd: 1.5 })];
    expect(paid.map((p) => p.status)).toEqual([201, 201]);
    const refused = await api("POST", "/v1/pay", researcher.token as string, { recipient: RECIPIENT, amount_usd: 4 });
    expect([refused.status, refused.body.code]).toEqual([403, "spending_limit_exceeded"]);
    // Settled, so the numbers read by the API and by the page are of the same state.
    for (const p of paid) await poll(`payment ${p.body.id} completed`, async () => ((await api("GET", `/v1/transactions/${p.body.id}`, root)).body.status === "completed" ? true : undefined));

    const admin = await createAdminCredential(server.server.ctx, { name: "tree test" });
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/console/signin`);
    await page.getByLabel("Admin key").fill(admin.credential);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.waitForURL(/\/console\/projects$/);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents`);

    // The structure: the grandchild's item is inside the middle token's list, inside the root's.
    const rootId = (await server.server.ctx.ledger.tokens.list(server.projectId)).find((t) => root.startsWith(t.display_prefix))!.id;
    await expect(page.locator(`#token-${rootId} > ul.token-tree > #token-${planner.id} > ul.token-tree > #token-${researcher.id}`).count()).resolves.toBe(1);
    await expect(page.locator(`#token-${rootId} > ul.token-tree > li`).count()).resolves.toBe(SIBLINGS + 1);
    await expect(page.locator(`#token-${researcher.id} > .token-node`).textContent()).resolves.toContain("Parent: planner");

    // Each token's numbers are its own GET /v1/limits, window by window (the project has none).
    const tokens: [string, string][] = [[rootId, root], [planner.id as string, planner.token as string], [researcher.id as string, researcher.token as string]];
    for (const [id, secret] of tokens) {
      const windows = ((await api("GET", "/v1/limits", secret)).body.windows as Window[]).filter((w) => w.scope !== "project");
      const shown = page.locator(`#token-${id} > .token-node li[data-window]`);
      await expect(shown.count()).resolves.toBe(windows.length);
      for (const w of windows) {
        const text = await page.locator(`#token-${id} > .token-node li[data-window="${w.scope}:${w.token_id ?? ""}:${w.interval}"]`).textContent();
        expect([id, w.scope, text]).toEqual([id, w.scope, expect.stringContaining(`$${usdText(w.spent_usd)} of $${usdText(w.limit_usd)} spent, $${usdText(w.remaining_usd)} left`)]);
      }
    }
    // The grandchild's spend is its own and counts against the planner's limits it inherits.
    const researcherWindows = ((await api("GET", "/v1/limits", researcher.token as string)).body.windows as Window[]).map((w) => `${w.scope}:${w.interval}:${w.spent_usd > 3.5 - 1e-9}`);
    expect(researcherWindows).toEqual(expect.arrayContaining(["token:daily:true", "allowance:all_time:true", "ancestor:daily:true", "ancestor_allowance:all_time:true"]));
    await expect(page.locator(`#token-${researcher.id} > .token-node`).textContent()).resolves.toContain("Daily (from planner");
    await expectAccessible(page, "agent-tree-desktop");
    await page.setViewportSize({ width: 375, height: 800 });
    await expectAccessible(page, "agent-tree-375");

    // The grandchild's refusal is rolled up to the middle token's page, naming who was refused; the middle
    // token's sibling branch sees none of it.
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents/${planner.id}`);
    const refusals = await page.locator("ul.refusals li").allTextContents();
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toContain(`by researcher ${researcher.display_prefix}…`);
    expect(refusals[0]).toContain("above the agent's daily limit of $5.00");
    const sibling = (await server.server.ctx.ledger.tokens.list(server.projectId)).find((t) => t.name === "worker 1")!;
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents/${sibling.id}`);
    await expect(page.locator("ul.refusals li").count()).resolves.toBe(0);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents`);

    // Revoke the middle token: the page names the grandchild before asking.
    await page.getByRole("link", { name: `Revoke planner (${planner.display_prefix}…)` }).click();
    await expect(page.locator("main").textContent()).resolves.toContain("This also revokes, at once, the 1 active token below it:");
    await expect(page.locator("main li").allTextContents()).resolves.toEqual([`researcher (${researcher.display_prefix}…)`]);
    await expectAccessible(page, "agent-tree-revoke-375");
    expect((await api("GET", "/v1/balance", researcher.token as string)).status).toBe(200);
    await page.getByRole("button", { name: "Confirm: revoke it and 1 below it" }).click();
    await page.getByText("Token revoked").waitFor();
    expect((await api("GET", "/v1/balance", researcher.token as string)).status).toBe(401);
    expect((await api("GET", "/v1/balance", planner.token as string)).status).toBe(401);
    expect((await api("GET", "/v1/balance", root)).status).toBe(200);
    await expect(page.locator(`#token-${researcher.id} .state`).textContent()).resolves.toMatch(/^revoked /);
    await context.close();
  });
});
