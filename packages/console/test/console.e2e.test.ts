/**
 * The console in a real browser (Debian's Chromium via playwright-core) against a real sandbox server: real
 * SQLite, real local chain, real deposits.
 */
import type { BrowserContext, Page } from "playwright-core";
import { describe, expect, it } from "vitest";
import { expectAccessible, screenshot, seriousViolations } from "./support/browser.ts";
import { useServerAndBrowser } from "./support/serverAndBrowser.ts";
import { tableRows, transactionRows } from "../../server/src/ledger/testing.ts";

const { server, browser } = useServerAndBrowser({ x402Demo: true });

/** Session cookies by token: a token signs in through the form once, later contexts reuse its session (sign-ins are rate-limited). */
const sessions = new Map<string, Awaited<ReturnType<BrowserContext["cookies"]>>>();

async function signInWithToken(context: BrowserContext, token: string): Promise<Page> {
  const page = await context.newPage();
  const known = sessions.get(token);
  if (known) {
    await context.addCookies(known);
    await page.goto(`${server.baseUrl}/console`);
    if (/\/console\/p\/prj_/.test(page.url())) return page;
  }
  await page.goto(`${server.baseUrl}/console/signin`);
  await page.getByLabel("Project API token").fill(token);
  await page.getByRole("button", { name: "Sign in with token" }).click();
  await page.waitForURL(/\/console\/p\/prj_/);
  sessions.set(token, await context.cookies());
  return page;
}

describe("console sign-in", () => {
  it("refuses a wrong token, and signs in with a good one into a cookie that scripts cannot read", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/console`);
    expect(page.url()).toContain("/console/signin");
    await page.getByLabel("Project API token").fill("aw_test_not-a-token");
    await page.getByRole("button", { name: "Sign in with token" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain("not valid");
    await screenshot(page, "signin-refused");

    const signedIn = await signInWithToken(context, server.token);
    await expect(signedIn.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("harness");
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === "aw_console")!;
    expect(session).toMatchObject({ httpOnly: true, sameSite: "Strict", path: "/console" });
    expect(await signedIn.evaluate(() => document.cookie)).toBe("");
    // The token is in no URL the browser visited and nowhere in its storage.
    expect(signedIn.url()).not.toContain(server.token);
    expect(await signedIn.evaluate(() => JSON.stringify(localStorage) + JSON.stringify(sessionStorage))).not.toContain("aw_test_");
    await context.close();
  });

  it("sign-in refuses another origin, and the cookie is Secure when the request came over HTTPS", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const foreign = await page.request.post(`${server.baseUrl}/console/signin`, { form: { kind: "token", secret: server.token }, headers: { origin: "https://evil.example" }, maxRedirects: 0 });
    expect([foreign.status(), foreign.headers()["set-cookie"]]).toEqual([403, undefined]);
    const plain = await page.request.post(`${server.baseUrl}/console/signin`, { form: { kind: "token", secret: server.token }, maxRedirects: 0 });
    expect(plain.headers()["set-cookie"]).toMatch(/^aw_console=[^;]+; Path=\/console; HttpOnly; SameSite=Strict; Expires=[^;]+$/);
    const tls = await page.request.post(`${server.baseUrl}/console/signin`, { form: { kind: "token", secret: server.token }, headers: { "x-forwarded-proto": "https" }, maxRedirects: 0 });
    expect(tls.headers()["set-cookie"]).toMatch(/; HttpOnly; SameSite=Strict; .*; Secure$/);
    await context.close();
  });

  it("the operator signs in with an admin credential and sees every project; revoking the credential ends the session; a project token is refused", async () => {
    const { createAdminCredential, revokeAdminCredential } = await import("../../server/src/services/adminCredentials.ts");
    const { consoleBackend } = await import("../../server/src/http/console.ts");
    const admin = await createAdminCredential(server.server.ctx, { name: "console test" });
    const other = await server.server.ctx.ledger.projects.create({ name: "another project", plan: "free" });
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/console/signin`);
    await page.getByLabel("Admin key").fill(admin.credential);
    await page.getByRole("button", { name: "Sign in as operator" }).click();
    await page.waitForURL(/\/console\/projects$/);
    await expect(page.locator(`a[href="/console/p/${other.id}"]`).textContent()).resolves.toBe("another project");
    await page.locator(`a[href="/console/p/${server.projectId}"]`).click();
    await page.waitForURL(/\/console\/p\/prj_/);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("harness");
    expect(page.url()).not.toContain(admin.credential);
    // The operator may manage every project's tokens.
    await page.getByRole("link", { name: "Agents" }).click();
    await expect(page.getByRole("link", { name: "Create a token" }).count()).resolves.toBe(1);
    // Revoked: the open session ends on its next page.
    await revokeAdminCredential(server.server.ctx, admin.id);
    await page.goto(`${server.baseUrl}/console/projects`);
    expect(page.url()).toContain("/console/signin");
    await context.close();
    // The sign-in form's check, without spending the page's sign-in attempts (bounded per address).
    const backend = consoleBackend(server.server.ctx, {});
    await expect(backend.verifyAdminCredential(server.token)).resolves.toBeNull();
    await expect(backend.verifyAdminCredential(admin.credential)).resolves.toBeNull();
  });

  it("a one-time sign-in code works once", async () => {
    const { createSignInCode } = await import("../../server/src/services/console/signIn.ts");
    const tokens = await server.server.ctx.ledger.tokens.list(server.projectId);
    const code = await createSignInCode(server.server.ctx, tokens[0]!.id);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/console/signin?code=${code}`);
    await page.getByRole("button", { name: "Continue" }).click();
    await page.waitForURL(/\/console\/p\/prj_/);
    const again = await browser.newContext();
    const second = await again.newPage();
    await second.goto(`${server.baseUrl}/console/signin?code=${code}`);
    await second.getByRole("button", { name: "Continue" }).click();
    await expect(second.getByRole("alert").textContent()).resolves.toContain("already used");
    await context.close();
    await again.close();
  });

  it("a revoked token ends its console session on the next page", async () => {
    const token = await server.createToken(["read"]);
    const context = await browser.newContext();
    const page = await signInWithToken(context, token);
    const row = (await server.server.ctx.ledger.tokens.list(server.projectId)).find((t) => token.startsWith(t.display_prefix))!;
    await server.server.ctx.ledger.tokens.revoke(row.id);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions`);
    expect(page.url()).toContain("/console/signin");
    await context.close();
  });
});

describe("console overview", () => {
  it("shows a deposit arrive without a reload", async () => {
    const context = await browser.newContext();
    const page = await signInWithToken(context, server.token);
    const available = page.locator('[data-live="available"]');
    const before = await available.textContent();
    await server.fund(2_500_000n);
    await page.waitForFunction((prev) => document.querySelector('[data-live="available"]')?.textContent !== prev, before, { timeout: 30_000 });
    const after = Number((await available.textContent())!.replace(/,/g, ""));
    expect(after).toBeCloseTo(Number(before!.replace(/,/g, "")) + 2.5, 6);
    await expect(page.locator(".address").first().textContent()).resolves.toMatch(/^0x[0-9a-fA-F]{40}$/);
    await expect(page.getByText("Send only USDC on Base").count()).resolves.toBe(1);
    await screenshot(page, "overview");
    await context.close();
  });

  it("in the sandbox, shows how to pay the demo x402 merchant, and the example works", async () => {
    const context = await browser.newContext();
    const page = await signInWithToken(context, server.token);
    const example = (await page.locator("#x402-example").textContent())!;
    expect(example).toContain(`${server.baseUrl}/v1/pay`);
    expect(example).toContain("$AGENTWALLET_API_TOKEN");
    expect(example).not.toContain("aw_test_");
    const body = JSON.parse(/-d '([^']+)'/.exec(example)![1]!) as Record<string, unknown>;
    const paid = await fetch(`${server.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    const answer = (await paid.json()) as { status?: string; response?: { status_code: number } };
    // The merchant answered (its settlement on-chain follows).
    expect([paid.status, answer.response?.status_code], JSON.stringify(answer)).toEqual([200, 200]);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions`);
    await expect(page.getByRole("link", { name: "x402 payment" }).count()).resolves.toBeGreaterThan(0);
    await context.close();
  });

  it("says the wallet is frozen while USDC's blacklister holds it, offers nothing as available, and stops saying so once released", async () => {
    const { recordWalletFreeze } = await import("../../server/src/rails/walletFreeze.ts");
    const ctx = server.server.ctx;
    const project = (await ctx.ledger.projects.get(server.projectId))!;
    const wallet = { id: project.id, wallet_address: project.wallet_address! };
    // (axe is injected as a script, which the console's CSP would refuse.)
    const context = await browser.newContext({ bypassCSP: true });
    try {
      await recordWalletFreeze(ctx, wallet, true, "console test");
      const page = await signInWithToken(context, server.token);
      await page.goto(`${server.baseUrl}/console/p/${server.projectId}`);
      await expect(page.locator("#frozen-wallet").textContent()).resolves.toMatch(/frozen by USDC's issuer since .*every payment is refused/);
      await expect(page.locator('[data-live="available"]').textContent()).resolves.toBe("0.00");
      expect(await seriousViolations(page)).toEqual([]);
      await recordWalletFreeze(ctx, wallet, false, "console test");
      await page.reload();
      expect(await page.locator("#frozen-wallet").count()).toBe(0);
    } finally {
      await recordWalletFreeze(ctx, wallet, false, "console test");
      await context.close();
    }
  });

  it("a read token sees the project but no fund button, and a forged fund request is refused", async () => {
    const token = await server.createToken(["read"]);
    const context = await browser.newContext();
    const page = await signInWithToken(context, token);
    await expect(page.getByRole("button", { name: "Fund 10 test USDC" }).count()).resolves.toBe(0);
    const csrf = await page.locator('meta[name="csrf-token"]').getAttribute("content");
    const res = await page.request.post(`${server.baseUrl}/console/p/${server.projectId}/fund`, { form: { csrf: csrf! }, maxRedirects: 0 });
    expect(res.status()).toBe(403);
    await context.close();
  });

  it("refuses a POST without the session's CSRF token or from another origin", async () => {
    const context = await browser.newContext();
    const page = await signInWithToken(context, server.token);
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    const noToken = await page.request.post(`${server.baseUrl}/console/p/${server.projectId}/fund`, { form: { csrf: "x" }, maxRedirects: 0 });
    expect(noToken.status()).toBe(403);
    const foreign = await page.request.post(`${server.baseUrl}/console/p/${server.projectId}/fund`, { form: { csrf }, headers: { origin: "https://evil.example" }, maxRedirects: 0 });
    expect(foreign.status()).toBe(403);
    // Every other POST of a session: tokens, controls, revocation, approvals.
    const self = (await server.server.ctx.ledger.tokens.list(server.projectId)).find((t) => server.token.startsWith(t.display_prefix))!;
    const p = `${server.baseUrl}/console/p/${server.projectId}`;
    for (const path of [`${p}/agents`, `${p}/agents/${self.id}/controls`, `${p}/agents/${self.id}/revoke`, `${p}/approvals/txn_x/approve`, `${p}/approvals/txn_x/deny`, `${server.baseUrl}/console/signout`]) {
      const noCsrf = await page.request.post(path, { form: { csrf: "x", perm_read: "on", rail_fiat: "on" }, maxRedirects: 0 });
      const other = await page.request.post(path, { form: { csrf, perm_read: "on", rail_fiat: "on" }, headers: { origin: "https://evil.example" }, maxRedirects: 0 });
      expect([path, noCsrf.status(), other.status()]).toEqual([path, 403, 403]);
    }
    expect((await server.server.ctx.ledger.tokens.get(self.id))!).toMatchObject({ revoked_at: null, spending_controls: null });
    await context.close();
  });

  it("another project is not found for a project token", async () => {
    const other = await server.server.ctx.ledger.projects.create({ name: "other", plan: "free" });
    const context = await browser.newContext();
    const page = await signInWithToken(context, server.token);
    const res = await page.goto(`${server.baseUrl}/console/p/${other.id}`);
    expect(res!.status()).toBe(404);
    await context.close();
  });
});

describe("console pages", () => {
  // One test per width: each runs axe over seven pages in a real browser.
  it.each([{ width: 1280, height: 900 }, { width: 390, height: 844 }])("have no serious accessibility violations at $width px wide", async (viewport) => {
    const context = await browser.newContext({ bypassCSP: true, viewport });
    const page = await signInWithToken(context, server.token);
    const pages = [`/console/p/${server.projectId}`, `/console/p/${server.projectId}/transactions`, `/console/p/${server.projectId}/approvals`, `/console/p/${server.projectId}/agents`, `/console/p/${server.projectId}/agents/new`, `/console/p/${server.projectId}/webhooks`];
    for (const path of pages) {
      await page.goto(`${server.baseUrl}${path}`);
      const violations = await seriousViolations(page);
      expect(violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).toEqual([]);
      await screenshot(page, `${path.split("/").pop() === server.projectId ? "overview" : path.split("/").slice(4).join("-")}-${viewport.width}`);
    }
    const signInPage = await context.newPage();
    await signInPage.goto(`${server.baseUrl}/console/signin`);
    expect(await seriousViolations(signInPage)).toEqual([]);
    await context.close();
  });

  it("opens a transaction from the list", async () => {
    const context = await browser.newContext();
    const page = await signInWithToken(context, server.token);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions`);
    await page.getByRole("link", { name: "Deposit" }).first().click();
    await page.waitForURL(/\/transactions\/txn_/);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toMatch(/^Deposit of \$/);
    await screenshot(page, "transaction");
    await context.close();
  });
});

describe("console transactions at 10k rows", () => {
  it("filters and pages by cursor as the API does, against a brute-force count of the same rows", async () => {
    const { seedTransactions } = await import("../../../bench/support/seedTransactions.ts");
    const ctx = server.server.ctx;
    const project = await ctx.ledger.projects.create({ name: "history", plan: "free" });
    await seedTransactions({ ctx, dialect: "sqlite", sqlitePath: ctx.config.sqlitePath } as never, project.id, 10_000);
    const { createToken } = await import("../../server/src/services/tokens.ts");
    const { token } = await createToken(ctx, { projectId: project.id, permissions: ["read"], mode: "test" });
    const context = await browser.newContext();
    const page = await signInWithToken(context, token);
    await page.goto(`${server.baseUrl}/console/p/${project.id}/transactions`);
    // The list shows a payment's fee on its payment's row: its rows are the seeded ones that are not fees.
    const count = async (type?: string) =>
      (await transactionRows(ctx.ledger, { projectId: project.id })).filter((r) => (type ? r.type === type && r.status === "completed" : r.type !== "platform_fee")).length;
    await expect(page.getByRole("status").textContent()).resolves.toBe(`1–50 of ${(await count()).toLocaleString("en-US")}`);
    const ids = async () => page.locator("tbody tr td:first-child a").evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href.split("/").pop()!));
    const first = await ids();
    expect(first).toHaveLength(50);
    await page.getByRole("link", { name: "Next page" }).click();
    const second = await ids();
    expect(second).toHaveLength(50);
    expect(second.filter((id) => first.includes(id))).toEqual([]);
    await screenshot(page, "transactions-page-2");

    await page.goto(`${server.baseUrl}/console/p/${project.id}/transactions`);
    await page.selectOption("#f-type", ["usdc_fund"]);
    await page.selectOption("#f-status", ["completed"]);
    await page.getByRole("button", { name: "Apply" }).click();
    await page.waitForURL(/type=usdc_fund/);
    const expected = { n: await count("usdc_fund") };
    await expect(page.getByRole("status").textContent()).resolves.toBe(`1–${Math.min(50, expected.n)} of ${expected.n.toLocaleString("en-US")}`);
    const types = await page.locator("tbody tr td:first-child a").allTextContents();
    const statuses = await page.locator("tbody tr .status").allTextContents();
    expect(types.length).toBe(Math.min(50, Number(expected.n)));
    expect(new Set(types)).toEqual(new Set(["Deposit"]));
    expect(new Set(statuses)).toEqual(new Set(["completed"]));
    await screenshot(page, "transactions-filtered");

    // A bad filter is the API's 400, shown as a page, not a crash.
    const bad = await page.goto(`${server.baseUrl}/console/p/${project.id}/transactions?created_after=yesterday`);
    expect(bad!.status()).toBe(400);
    await context.close();
  });
});

const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

async function api(path: string, token: string, body?: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

describe("console agents (tokens)", () => {
  it("creates a token with controls, shown once with its MCP configuration; changes its controls; shows its spend against them; revokes it", async () => {
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 375, height: 800 }, permissions: ["clipboard-read", "clipboard-write"] });
    const page = await signInWithToken(context, server.token);
    await page.getByRole("link", { name: "Agents" }).click();
    await page.getByRole("link", { name: "Create a token" }).click();
    await expectAccessible(page, "token-new-375");
    await page.getByLabel("pay: USDC transfers and bank payments").check();
    await page.getByLabel("Daily limit").fill("5");
    await page.getByLabel("Per payment limit").fill("4");
    await page.getByLabel("Never these recipients (one per line)").fill("blocked.example.com");
    await page.getByLabel("x402", { exact: true }).uncheck();
    await page.getByRole("button", { name: "Create token" }).click();
    await page.waitForLoadState();
    expect(await page.locator("h1").textContent(), await page.locator("main").textContent() ?? "").toBe("Token created");
    const token = (await page.locator("#new-token").textContent())!.trim();
    expect(token).toMatch(/^aw_test_/);
    // The token is in the page once, never in the URL; the configuration is ready to paste.
    expect(page.url()).not.toContain(token);
    const config = JSON.parse((await page.locator("#mcp-config").textContent())!) as { mcpServers: { agentwallet: { command: string; args: string[]; env: Record<string, string> } } };
    expect(config.mcpServers.agentwallet.env).toEqual({ AGENTWALLET_API_TOKEN: token, AGENTWALLET_BASE_URL: server.baseUrl, AGENTWALLET_MAX_PAYMENT_USD: "4" });
    expect(config.mcpServers.agentwallet.args[0]).toMatch(/packages\/mcp\/bin\/agentwallet-mcp\.js$/);
    // The copy button works from the keyboard: Tab to it, Enter, and the clipboard holds the token.
    const copy = page.getByRole("button", { name: "Copy token" });
    await page.locator("#new-token").focus();
    await page.keyboard.press("Tab");
    await expect(copy.evaluate((b) => b === document.activeElement)).resolves.toBe(true);
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Copied" }).waitFor();
    await expect(page.evaluate(() => navigator.clipboard.readText())).resolves.toBe(token);
    await expectAccessible(page, "token-created-375");

    // The API applies what the form set, through the same controls GET /v1/limits shows.
    const limits = await api("/v1/limits", token);
    expect(limits.body.token).toMatchObject({
      spending_limits: [{ amount_usd: 4, interval: "per_payment" }, { amount_usd: 5, interval: "daily" }],
      blocked_recipients: ["blocked.example.com"],
      allowed_rails: ["usdc_transfer", "fiat"],
      approval_above_usd: null,
    });

    // Change controls: a daily limit of 6. A bank account the CLI blocked is shown masked, and kept.
    const { updateControls } = await import("../../server/src/services/spendingControls.ts");
    const created = (await server.server.ctx.ledger.tokens.list(server.projectId)).find((t) => token.startsWith(t.display_prefix))!;
    await updateControls(server.server.ctx, "token", created.id, { blocked_recipients: ["blocked.example.com", "bank:021000021:123456789"] });
    await page.getByRole("link", { name: "This token's controls" }).click();
    await page.getByLabel("Daily limit").fill("6");
    await page.getByRole("button", { name: "Save controls" }).click();
    await page.getByText("Controls saved").waitFor();
    expect((await api("/v1/limits", token)).body.token).toMatchObject({
      spending_limits: [{ amount_usd: 4, interval: "per_payment" }, { amount_usd: 6, interval: "daily" }],
      blocked_recipients: ["blocked.example.com", "bank account ••••6789 (routing 021000021)"],
    });
    // A wrong amount is shown on the form, not a crash.
    await page.getByLabel("Weekly limit").fill("ten");
    await page.getByRole("button", { name: "Save controls" }).click();
    await expect(page.getByRole("alert").textContent()).resolves.toContain("weekly limit");

    // Spend against the limit: pay 3 USDC with it through the API.
    await server.fund(10_000_000n);
    expect((await api("/v1/pay", token, { recipient: RECIPIENT, amount_usd: 3 })).status).toBe(201);
    await page.getByRole("link", { name: "Agents" }).click();
    const row = page.locator(".token-node", { has: page.locator(`a[aria-label="Token ${token.slice(0, 12)}"]`) });
    await expect(row.textContent()).resolves.toContain("Daily (own): $3.00 of $6.00 spent, $3.00 left");
    await expectAccessible(page, "agents-375");

    // Paid until refused: the refusal and the spend against the limit are on the token's page.
    const refused = await api("/v1/pay", token, { recipient: RECIPIENT, amount_usd: 4 });
    expect([refused.status, refused.body.code]).toEqual([403, "spending_limit_exceeded"]);
    await row.getByRole("link", { name: `Token ${token.slice(0, 12)}` }).click();
    await expect(page.locator("main").textContent()).resolves.toContain("Daily: $3.00 of $6.00 spent, $3.00 left");
    await expect(page.locator("ul.refusals").textContent()).resolves.toMatch(/spending_limit_exceeded \(\$4\.00 by USDC transfer to 0x90f79bf6eb2c4f870365e785982e1f101e93b906\)/i);
    await expectAccessible(page, "token-375");
    await page.getByRole("link", { name: "Overview" }).click();
    await expect(page.locator("ul.refusals").textContent()).resolves.toContain(`spending_limit_exceeded ${token.slice(0, 12)}…`);
    await page.goBack();

    // Revoke: the API refuses the token at once.
    await page.getByRole("button", { name: "Revoke token" }).click();
    await page.getByText("Token revoked").waitFor();
    expect((await api("/v1/balance", token)).status).toBe(401);
    await context.close();
  });

  it("a read token sees tokens but no create, change or revoke, and the server refuses those requests", async () => {
    const readToken = await server.createToken(["read"]);
    const context = await browser.newContext();
    const page = await signInWithToken(context, readToken);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents`);
    await expect(page.getByRole("link", { name: "Create a token" }).count()).resolves.toBe(0);
    const other = (await server.server.ctx.ledger.tokens.list(server.projectId)).find((t) => server.token.startsWith(t.display_prefix))!;
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents/${other.id}`);
    await expect(page.getByRole("button", { name: "Save controls" }).count()).resolves.toBe(0);
    await expect(page.getByRole("button", { name: "Revoke token" }).count()).resolves.toBe(0);
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    const base = `${server.baseUrl}/console/p/${server.projectId}/agents`;
    const tokensBefore = (await server.server.ctx.ledger.tokens.list(server.projectId)).length;
    const forged = [
      await page.request.post(base, { form: { csrf, perm_read: "on", perm_pay: "on", perm_x402: "on", rail_x402: "on", rail_usdc_transfer: "on", rail_fiat: "on" }, maxRedirects: 0 }),
      await page.request.post(`${base}/${other.id}/controls`, { form: { csrf, limit_daily: "1", rail_fiat: "on" }, maxRedirects: 0 }),
      await page.request.post(`${base}/${other.id}/revoke`, { form: { csrf }, maxRedirects: 0 }),
    ];
    expect(forged.map((r) => r.status())).toEqual([403, 403, 403]);
    expect((await server.server.ctx.ledger.tokens.list(server.projectId)).length).toBe(tokensBefore);
    expect((await server.server.ctx.ledger.tokens.get(other.id))!).toMatchObject({ revoked_at: null, spending_controls: null });
    await page.goto(`${base}/new`);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Not allowed");
    await context.close();
  });
});

describe("console approvals", () => {
  it("a payment above the approval threshold waits; a read token cannot decide; approved in the console it completes on-chain, denied it fails", async () => {
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 375, height: 800 } });
    const page = await signInWithToken(context, server.token);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents/new`);
    await page.getByLabel("pay: USDC transfers and bank payments").check();
    await page.getByLabel("Approval above (US dollars)").fill("1");
    await page.getByRole("button", { name: "Create token" }).click();
    const agent = (await page.locator("#new-token").textContent())!.trim();
    await server.fund(5_000_000n);
    const a = await api("/v1/pay", agent, { recipient: RECIPIENT, amount_usd: 2, description: "approve me" });
    const b = await api("/v1/pay", agent, { recipient: RECIPIENT, amount_usd: 1.5, description: "deny me" });
    expect([a.status, a.body.status, b.status]).toEqual([201, "pending", 201]);

    // A read token sees them waiting, without the buttons; a forged decision is refused.
    const readContext = await browser.newContext();
    const reader = await signInWithToken(readContext, await server.createToken(["read"]));
    await reader.goto(`${server.baseUrl}/console/p/${server.projectId}/approvals`);
    await expect(reader.getByRole("link", { name: "USDC transfer: approve me" }).count()).resolves.toBe(1);
    await expect(reader.getByRole("button", { name: /^Approve/ }).count()).resolves.toBe(0);
    const csrf = (await reader.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    const forged = await reader.request.post(`${server.baseUrl}/console/p/${server.projectId}/approvals/${String(a.body.id)}/approve`, { form: { csrf }, maxRedirects: 0 });
    expect(forged.status()).toBe(403);
    expect((await server.server.ctx.ledger.payments.getPayment(String(a.body.id)))!.approval).toBe("awaiting");
    await readContext.close();

    // The overview lists them; the approvals page decides.
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}`);
    await expect(page.locator("section", { has: page.getByRole("heading", { name: "Waiting for approval" }) }).getByRole("link", { name: "USDC transfer: deny me" }).count()).resolves.toBe(1);
    await page.getByRole("link", { name: "Approvals", exact: true }).first().click();
    await expectAccessible(page, "approvals-375");
    // Asking to decide shows the payment and asks for a confirmation, with an optional reason.
    await page.getByRole("button", { name: /^Approve 2\.00 USD/ }).click();
    await page.getByRole("heading", { name: "Approve this payment?" }).waitFor();
    expect((await server.server.ctx.ledger.payments.getPayment(String(a.body.id)))!.approval).toBe("awaiting");
    await expectAccessible(page, "approve-confirm-375");
    await page.getByLabel(/^Reason/).fill("looks right");
    await page.getByRole("button", { name: "Confirm: approve $2.00" }).click();
    await page.getByText("Approved: the payment is being sent.").waitFor();
    await page.getByRole("button", { name: /^Deny 1\.50 USD/ }).click();
    await page.getByRole("button", { name: "Confirm: deny $1.50" }).click();
    await page.getByText("Denied: the payment failed").waitFor();
    const decided = await page.locator("table", { has: page.locator("caption", { hasText: "decided lately" }) }).textContent();
    expect(decided).toMatch(/Approved by token aw_test_\S+… \(tok_\S+\) at \d{4}-\d\d-\d\d \S+ UTC: looks right/);
    expect(decided).toContain("Denied by token");
    await screenshot(page, "approvals-decided-375");

    // The approved payment completes on-chain: its page shows the hash and the history with who approved.
    let text = "";
    for (let i = 0; i < 100; i++) {
      await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions/${String(a.body.id)}`);
      text = (await page.locator("main").textContent())!;
      if (/Status\s*completed/.test(text)) break;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(text).toMatch(/On-chain transaction\s*0x[0-9a-f]{64}/);
    const history = await page.locator("ol.history li").allTextContents();
    expect(history.map((h) => h.replace(/^.+? UTC /, ""))).toEqual([
      expect.stringMatching(/^pending Created; \$2\.\d\d held from the balance$/),
      expect.stringMatching(/^pending Waits for approval/),
      expect.stringMatching(/^pending Approved by token aw_test_\S+… \(tok_\S+\): looks right$/),
      // The transitions its webhooks report (payment.created, approval_required, processing, completed), with the decision.
      expect.stringMatching(/^processing Sent on-chain: 0x[0-9a-f]{64}$/),
      "completed Completed",
    ]);
    await expectAccessible(page, "transaction-approved-375");

    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions/${String(b.body.id)}`);
    await expect(page.locator("ol.history").textContent()).resolves.toContain("Failed (approval_denied)");

    // With an approval threshold on the project itself, only the operator decides: a token approving what
    // it paid would undo the operator's control.
    const { updateControls } = await import("../../server/src/services/spendingControls.ts");
    const { decidePayment } = await import("../../server/src/services/approvals.ts");
    await updateControls(server.server.ctx, "project", server.projectId, { approval_above_usd: 100 });
    try {
      const c = await api("/v1/pay", agent, { recipient: RECIPIENT, amount_usd: 1.25, description: "the operator's" });
      await page.goto(`${server.baseUrl}/console/p/${server.projectId}/approvals`);
      await expect(page.getByRole("link", { name: "USDC transfer: the operator's" }).count()).resolves.toBe(1);
      await expect(page.getByRole("button", { name: /^Approve/ }).count()).resolves.toBe(0);
      await expect(page.locator("main").textContent()).resolves.toContain("approval threshold is the operator's");
      const csrfFull = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
      const refused = await page.request.post(`${server.baseUrl}/console/p/${server.projectId}/approvals/${String(c.body.id)}/approve`, { form: { csrf: csrfFull }, maxRedirects: 0 });
      expect(refused.status()).toBe(403);
      expect((await server.server.ctx.ledger.payments.getPayment(String(c.body.id)))!.approval).toBe("awaiting");
      await decidePayment(server.server.ctx, String(c.body.id), "denied", "test cleanup");
    } finally {
      await updateControls(server.server.ctx, "project", server.projectId, { approval_above_usd: null });
    }
    await context.close();
  });
});

describe("console webhooks", () => {
  it("adds an endpoint (secret shown once), shows deliveries with their attempts on it and on the transaction, redelivers, deletes", async () => {
    const { createServer } = await import("node:http");
    const received: { id: string; type: string }[] = [];
    const receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c: Buffer) => (body += c.toString()));
      req.on("end", () => {
        received.push({ id: String(req.headers["webhook-id"]), type: (JSON.parse(body) as { type: string }).type });
        res.writeHead(204).end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(receiver.address() as { port: number }).port}/hooks`;
    const waitFor = async (what: string, ok: () => boolean) => {
      for (let i = 0; i < 150 && !ok(); i++) await new Promise((r) => setTimeout(r, 100));
      expect(ok(), what).toBe(true);
    };
    try {
      const context = await browser.newContext({ bypassCSP: true, viewport: { width: 375, height: 800 } });
      const page = await signInWithToken(context, server.token);
      await page.getByRole("link", { name: "Webhooks" }).click();
      await page.getByLabel("URL").fill(url);
      await page.getByLabel("payment.completed").check();
      await page.getByRole("button", { name: "Add endpoint" }).click();
      await expect(page.locator("#webhook-secret").textContent()).resolves.toMatch(/^whsec_/);
      await expectAccessible(page, "webhook-created-375");

      await server.fund(2_000_000n);
      const paid = await api("/v1/pay", server.token, { recipient: RECIPIENT, amount_usd: 0.5 });
      expect(paid.status).toBe(201);
      await waitFor("payment.completed delivered", () => received.some((r) => r.type === "payment.completed"));
      await page.getByRole("link", { name: "This endpoint's deliveries" }).click();
      let table = "";
      for (let i = 0; i < 50 && !/delivered/.test(table); i++) {
        await page.reload();
        table = (await page.locator("main").textContent())!;
      }
      expect(table).toMatch(/payment\.completed.*delivered\s*1\s*.*HTTP 204/s);
      await expectAccessible(page, "webhook-375");

      // The transaction's page lists its delivery; redeliver sends the same event (same webhook-id) again.
      await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions/${String(paid.body.id)}`);
      await expect(page.locator("main").textContent()).resolves.toContain("Webhook deliveries");
      const before = received.length;
      const eventId = received.find((r) => r.type === "payment.completed")!.id;
      await page.getByRole("button", { name: /^Redeliver payment\.completed/ }).click();
      await page.getByText("Sent again: 1 delivery(ies) scheduled now.").waitFor();
      await waitFor("redelivered", () => received.length > before);
      expect(received[received.length - 1]!.id).toBe(eventId);
      await expectAccessible(page, "transaction-webhooks-375");

      // A read token sees endpoints but cannot add, delete or redeliver.
      const readContext = await browser.newContext();
      const reader = await signInWithToken(readContext, await server.createToken(["read"]));
      await reader.goto(`${server.baseUrl}/console/p/${server.projectId}/webhooks`);
      await expect(reader.getByRole("button", { name: "Add endpoint" }).count()).resolves.toBe(0);
      const endpointId = (await server.server.ctx.ledger.webhooks.listEndpoints(server.projectId))[0]!.id;
      const csrf = (await reader.locator('meta[name="csrf-token"]').getAttribute("content"))!;
      const base = `${server.baseUrl}/console/p/${server.projectId}/webhooks`;
      const forged = [
        await reader.request.post(base, { form: { csrf, url: "http://127.0.0.1:9/x" }, maxRedirects: 0 }),
        await reader.request.post(`${base}/${endpointId}/delete`, { form: { csrf }, maxRedirects: 0 }),
        await reader.request.post(`${base}/events/${eventId}/redeliver`, { form: { csrf }, maxRedirects: 0 }),
      ];
      expect(forged.map((r) => r.status())).toEqual([403, 403, 403]);
      await readContext.close();

      await page.goto(`${base}/${endpointId}`);
      await page.getByRole("button", { name: "Delete endpoint" }).click();
      await page.getByText("Endpoint deleted").waitFor();
      expect(await server.server.ctx.ledger.webhooks.listEndpoints(server.projectId)).toEqual([]);
      await context.close();
    } finally {
      receiver.close();
    }
  });
});

describe("console one-time views", () => {
  const tokenIds = async () => (await server.server.ctx.ledger.tokens.list(server.projectId)).map((t) => t.id);

  it("a new token is shown once: reload, back and forward show 'already shown' and create nothing", async () => {
    const context = await browser.newContext({ bypassCSP: true });
    const page = await signInWithToken(context, server.token);
    const before = await tokenIds();
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents/new`);
    await page.getByLabel("pay: USDC transfers and bank payments").check();
    await page.getByRole("button", { name: "Create token" }).click();
    await page.locator("#new-token").waitFor();
    const token = (await page.locator("#new-token").textContent())!.trim();
    expect(token).toMatch(/^aw_test_/);
    const after = await tokenIds();
    expect(after.filter((id) => !before.includes(id))).toHaveLength(1);

    await page.reload();
    expect(await tokenIds()).toEqual(after);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Already shown");
    expect(page.url()).toMatch(/\/agents\/created\/[A-Za-z0-9_-]+$/);
    expect(page.url()).not.toContain(token);
    // Nothing is kept once shown, and what was kept until then was never the token in the clear (below).
    expect(await tableRows(server.server.ctx.ledger, "console_one_time_views")).toEqual([]);
    await expect(page.locator("main").textContent()).resolves.not.toContain(token);
    await expectAccessible(page, "token-already-shown");
    await page.goBack();
    expect(page.url()).toMatch(/\/agents\/new$/);
    await page.goForward();
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Already shown");
    expect(await page.content()).not.toContain(token);
    expect(await tokenIds()).toEqual(after);

    await context.close();
  });

  it("a view opened first by another session is refused there and shown to its own session", async () => {
    const mine = await browser.newContext();
    const page = await signInWithToken(mine, server.token);
    // Another sign-in with the same token is another session.
    const theirs = await browser.newContext();
    const intruder = await theirs.newPage();
    await intruder.goto(`${server.baseUrl}/console/signin`);
    await intruder.getByLabel("Project API token").fill(server.token);
    await intruder.getByRole("button", { name: "Sign in with token" }).click();
    await intruder.waitForURL(/\/console\/p\/prj_/);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/agents/new`);
    // Stop at the redirect to read the view's address before the browser follows it.
    const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
    const res = await page.request.post(`${server.baseUrl}/console/p/${server.projectId}/agents`, { form: { csrf, perm_read: "on", rail_x402: "on", rail_usdc_transfer: "on", rail_fiat: "on" }, maxRedirects: 0 });
    expect(res.status()).toBe(303);
    const location = res.headers().location!;
    expect(location).toMatch(/^\/console\/p\/prj_[^/]+\/agents\/created\/[A-Za-z0-9_-]+$/);
    await intruder.goto(`${server.baseUrl}${location}`);
    await expect(intruder.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Already shown");
    await page.goto(`${server.baseUrl}${location}`);
    await expect(page.locator("#new-token").textContent()).resolves.toMatch(/^aw_test_/);
    await mine.close();
    await theirs.close();
  });

  it("a webhook endpoint's secret is shown once: a reload shows 'already shown' and adds no second endpoint", async () => {
    const context = await browser.newContext({ bypassCSP: true });
    const page = await signInWithToken(context, server.token);
    const endpoints = async () => (await server.server.ctx.ledger.webhooks.listEndpoints(server.projectId)).length;
    const before = await endpoints();
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/webhooks`);
    await page.getByLabel("URL").fill("http://127.0.0.1:9/once");
    await page.getByRole("button", { name: "Add endpoint" }).click();
    const secret = (await page.locator("#webhook-secret").textContent())!.trim();
    expect(secret).toMatch(/^whsec_/);
    await page.reload();
    expect(await endpoints()).toBe(before + 1);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Already shown");
    expect(page.url()).toMatch(/\/webhooks\/created\/[A-Za-z0-9_-]+$/);
    expect(await page.content()).not.toContain(secret);
    await expectAccessible(page, "webhook-already-shown");
    await page.goBack();
    await page.goForward();
    expect(await page.content()).not.toContain(secret);
    expect(await endpoints()).toBe(before + 1);
    const created = (await server.server.ctx.ledger.webhooks.listEndpoints(server.projectId)).find((e) => e.url === "http://127.0.0.1:9/once")!;
    await server.server.ctx.ledger.webhooks.deleteEndpoint(created.id, new Date().toISOString());
    await context.close();
  });
});

describe("console roles and audit log", () => {
  /** A browser context signed in as an operator holding a new credential of this role (a session made directly: sign-in attempts are rate-limited). */
  async function operatorContext(role: "viewer" | "approver" | "admin", viewport = { width: 1280, height: 900 }) {
    const { createAdminCredential } = await import("../../server/src/services/adminCredentials.ts");
    const { consoleBackend } = await import("../../server/src/http/console.ts");
    const cred = await createAdminCredential(server.server.ctx, { name: `${role} of the team`, role }, { id: "cli:test", name: "test", role: null, ip: null });
    const session = await consoleBackend(server.server.ctx, {}).createSession({ kind: "operator", credentialId: cred.id });
    const context = await browser.newContext({ bypassCSP: true, viewport });
    await context.addCookies([{ name: "aw_console", value: session.id, url: `${server.baseUrl}/console` }]);
    return { context, page: await context.newPage(), cred };
  }

  it("an approver decides with a reason but gets no controls and its changes are refused; a viewer sees all and changes nothing; the audit log shows each", async () => {
    const { issueToken } = await import("../../server/src/services/tokens.ts");
    const p = `${server.baseUrl}/console/p/${server.projectId}`;
    const agent = await issueToken(server.server.ctx, { projectId: server.projectId, permissions: ["read", "pay"], mode: "test", controls: { approval_above_usd: 1 } }, { id: "cli:test", name: "test", role: null, ip: null });
    await server.fund(5_000_000n);
    const paid = await api("/v1/pay", agent.token, { recipient: RECIPIENT, amount_usd: 1.75, description: "for the approver" });
    expect([paid.status, paid.body.status]).toEqual([201, "pending"]);

    const approver = await operatorContext("approver", { width: 375, height: 800 });
    try {
      const page = approver.page;
      await page.goto(`${p}/agents`);
      await expect(page.getByRole("link", { name: "Create a token" }).count()).resolves.toBe(0);
      await page.goto(`${p}/agents/${agent.id}`);
      await expect(page.getByRole("button", { name: "Save controls" }).count()).resolves.toBe(0);
      await expect(page.getByRole("button", { name: "Revoke token" }).count()).resolves.toBe(0);
      const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
      for (const path of [`${p}/agents/${agent.id}/controls`, `${p}/agents/${agent.id}/revoke`, `${p}/agents`, `${p}/webhooks`]) {
        const res = await page.request.post(path, { form: { csrf, perm_read: "on", daily_usd: "1", url: "http://127.0.0.1:9/x" }, maxRedirects: 0 });
        expect([path, res.status()]).toEqual([path, 403]);
      }
      expect(await server.server.ctx.ledger.tokens.get(agent.id)).toMatchObject({ revoked_at: null });

      await page.goto(`${p}/approvals`);
      await page.getByRole("button", { name: /^Approve 1\.75 USD/ }).click();
      await page.getByRole("heading", { name: "Approve this payment?" }).waitFor();
      await expectAccessible(page, "approve-confirm-approver-375");
      await page.getByLabel(/^Reason/).fill("expected invoice");
      await page.getByRole("button", { name: "Confirm: approve $1.75" }).click();
      await page.getByText("Approved: the payment is being sent.").waitFor();
      const decided = await page.locator("table", { has: page.locator("caption", { hasText: "decided lately" }) }).textContent();
      expect(decided).toContain(`Approved by approver of the team (${approver.cred.id})`);
      expect(decided).toContain("expected invoice");
    } finally {
      await approver.context.close();
    }

    const viewer = await operatorContext("viewer");
    try {
      const page = viewer.page;
      for (const path of ["", "/transactions", "/approvals", "/agents", "/webhooks"]) expect((await page.goto(`${p}${path}`))!.status()).toBe(200);
      await page.goto(`${p}/approvals`);
      await expect(page.getByRole("button", { name: /^(Approve|Deny)/ }).count()).resolves.toBe(0);
      expect((await page.goto(`${p}/approvals/${String(paid.body.id)}/deny`))!.status()).toBe(403);
      const csrf = (await page.locator('meta[name="csrf-token"]').getAttribute("content"))!;
      for (const path of [`${p}/approvals/${String(paid.body.id)}/deny`, `${p}/agents/${agent.id}/revoke`, `${p}/agents`, `${p}/fund`]) {
        const res = await page.request.post(path, { form: { csrf, perm_read: "on" }, maxRedirects: 0 });
        expect([path, res.status()]).toEqual([path, 403]);
      }
      expect((await server.server.ctx.ledger.payments.getPayment(String(paid.body.id)))!.approval).toBe("approved");

      // The audit log: the decision with its approver, role, address and reason; pages pass axe at both widths.
      await page.goto(`${p}/audit`);
      const row = page.locator("tr", { hasText: String(paid.body.id) });
      await expect(row.textContent()).resolves.toMatch(/approver of the team[\s\S]*\(approver\)[\s\S]*from \S+[\s\S]*Decided a payment[\s\S]*approval: "awaiting"[\s\S]*approval: "approved"; reason: "expected invoice"/);
      await expect(page.locator("tr", { hasText: agent.id }).first().textContent()).resolves.toContain("Created a token");
      for (const viewport of [{ width: 375, height: 800 }, { width: 1280, height: 900 }]) {
        await page.setViewportSize(viewport);
        for (const path of [`${p}/audit`, `${server.baseUrl}/console/audit`]) {
          await page.goto(path);
          await expectAccessible(page, `audit-${path.endsWith("/console/audit") ? "all" : "project"}-${viewport.width}`);
        }
      }
      await expect(page.locator("main").textContent()).resolves.toContain(`Created an admin credential ${viewer.cred.id}`);
    } finally {
      await viewer.context.close();
    }
    // The console's writes are the API's: the same entries through GET /v1/admin/audit's service.
    const { listAudit } = await import("../../server/src/services/audit.ts");
    const decision = (await listAudit(server.server.ctx, { projectId: server.projectId, action: "approval.decided" })).data.find((e) => e.target_id === String(paid.body.id));
    expect(decision).toMatchObject({ actor: { name: "approver of the team", role: "approver" }, before: { approval: "awaiting" }, after: { approval: "approved", reason: "expected invoice" } });
  });
});
