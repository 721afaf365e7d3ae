/**
 * The transactions list answers "which agent" and "who was paid", in a real browser (Debian's Chromium) against
 * a real sandbox server: three named agents (and a sub-agent of one) pay by x402 (the demo merchant), USDC
 * transfer (the local chain) and bank (the sandbox off-ramp); the list's agent and counterparty columns, its
 * filters, its position text and its CSV export are checked against the API's `GET /v1/transactions`.
 */
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type TestServer, startTestServer } from "../../server/src/testing/harness.ts";
import { formatMicros } from "../src/format.ts";
import { launchBrowser, screenshot, seriousViolations } from "./support/browser.ts";

let server: TestServer;
let browser: Browser;
let root: string;
let cookies: Awaited<ReturnType<BrowserContext["cookies"]>>;
const LISTED = "usdc_fund,payment,x402_payment,usdc_transfer";
const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const BANK = { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" };
/** The sandbox off-ramp fails a payout to this account (R03). */
const FAILING_BANK = { name: "Bo Tran", account_number: "1111000000", routing_number: "021000021" };
const ids: Record<string, string> = {};

type ApiTxn = { id: string; type: string; status: string; amount: number; currency: string; created_at: string; failure_code?: string };

async function api<T = Record<string, unknown>>(path: string, token: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as T };
}

const listed = async (query = "") => (await api<{ transactions: ApiTxn[]; total_count: number }>(`/v1/transactions?limit=100&type=${LISTED}${query}`, root)).body;

async function settled(id: string, status: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if ((await api<ApiTxn>(`/v1/transactions/${id}`, root)).body.status === status) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${id} never became ${status}`);
}

beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer({ x402Demo: true }), launchBrowser()]);
  root = await server.createToken(["read", "pay", "x402", "delegate"]);
  await server.fund(20_000_000n);
  // Three named agents, one with a sub-agent, each made by the project's token (POST /v1/tokens).
  const child = async (parent: string, body: Record<string, unknown>) => {
    const res = await api<{ id: string; token: string }>("/v1/tokens", parent, body);
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    return res.body;
  };
  const research = await child(root, { name: "research", permissions: ["read", "pay", "x402", "delegate"] });
  const scraper = await child(research.token, { name: "scraper", permissions: ["read", "pay", "x402"] });
  const treasury = await child(root, { name: "treasury", permissions: ["read", "pay"], spending_controls: { spending_limits: [{ amount_usd: 2, interval: "daily" }] } });
  const payroll = await child(root, { name: "payroll", permissions: ["read", "pay"] });
  Object.assign(ids, { research: research.id, scraper: scraper.id, treasury: treasury.id, payroll: payroll.id });

  // Each pays: x402 (the sandbox's demo merchant, as the overview's example shows it), USDC, bank.
  const context = await browser.newContext();
  const page = await signIn(context);
  const example = (await page.locator("#x402-example").textContent())!;
  const x402 = JSON.parse(/-d '([^']+)'/.exec(example)![1]!) as Record<string, unknown>;
  await context.close();
  const pay = async (token: string, body: Record<string, unknown>) => {
    const res = await api<{ id: string; status: string }>("/v1/pay", token, body);
    expect([200, 201, 202], JSON.stringify(res.body)).toContain(res.status);
    return res.body.id;
  };
  ids.x402 = await pay(research.token, x402);
  ids.x402sub = await pay(scraper.token, x402);
  ids.transfer = await pay(treasury.token, { recipient: RECIPIENT, amount_usd: 1.25 });
  ids.bank = await pay(payroll.token, { recipient: BANK, amount_usd: 2.5 });
  ids.failing = await pay(payroll.token, { recipient: FAILING_BANK, amount_usd: 3 });
  // Above treasury's daily limit: refused, nothing held.
  const refused = await api<{ code: string }>("/v1/pay", treasury.token, { recipient: RECIPIENT, amount_usd: 3 });
  expect([refused.status, refused.body.code]).toEqual([403, "spending_limit_exceeded"]);
  await settled(ids.failing, "failed");
}, 180_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

/** Signs in once with the project's token; later contexts reuse the session (sign-ins are rate-limited). */
async function signIn(context: BrowserContext): Promise<Page> {
  const page = await context.newPage();
  if (cookies) {
    await context.addCookies(cookies);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}`);
    return page;
  }
  await page.goto(`${server.baseUrl}/console/signin`);
  await page.getByLabel("Project API token").fill(root);
  await page.getByRole("button", { name: "Sign in with token" }).click();
  await page.waitForURL(/\/console\/p\/prj_/);
  cookies = await context.cookies();
  return page;
}

const rowIds = (page: Page) => page.locator("table.txlist tbody tr td:first-child a").evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href.split("/").pop()!));
const column = (page: Page, label: string) => page.locator(`table.txlist tbody td[data-label="${label}"]`).allTextContents();

async function applyFilters(page: Page, set: (page: Page) => Promise<unknown>): Promise<void> {
  await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions`);
  await set(page);
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForLoadState();
}

describe("the transactions list", () => {
  it("shows every payment with its agent, counterparty and fee, in the API's order, with its place in the list", async () => {
    const context = await browser.newContext({ timezoneId: "America/New_York" });
    const page = await signIn(context);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions`);
    const expected = await listed();
    expect(await rowIds(page)).toEqual(expected.transactions.map((t) => t.id));
    await expect(page.locator("#position").textContent()).resolves.toBe(`1–${expected.total_count} of ${expected.total_count}`);
    const row = (id: string) => page.locator("table.txlist tbody tr", { has: page.locator(`a[href$="/${id}"]`) });
    await expect(row(ids.x402!).locator('td[data-label="Agent"]').textContent()).resolves.toBe("research");
    await expect(row(ids.x402sub!).locator('td[data-label="Agent"]').textContent()).resolves.toBe("scraper");
    await expect(row(ids.transfer!).locator('td[data-label="Agent"]').textContent()).resolves.toBe("treasury");
    await expect(row(ids.bank!).locator('td[data-label="Agent"]').textContent()).resolves.toBe("payroll");
    await expect(row(ids.bank!).locator('td[data-label="Counterparty"]').textContent()).resolves.toBe("Ann Lee ••••5678");
    await expect(row(ids.transfer!).locator('td[data-label="Counterparty"] .address').textContent()).resolves.toBe(RECIPIENT);
    await expect(row(ids.transfer!).getByRole("button", { name: `Copy address ${RECIPIENT}` }).isVisible()).resolves.toBe(true);
    const x402Cell = (await row(ids.x402!).locator('td[data-label="Counterparty"]').textContent())!;
    expect(x402Cell).toMatch(/^127\.0\.0\.1:\d+\/.+/);
    // The fee beside its amount: the API's fee row of the same payment.
    const transfer = (await api<{ payment_id: string }>(`/v1/transactions/${ids.transfer}`, root)).body;
    const fee = (await api<ApiTxn>(`/v1/transactions/${transfer.payment_id}`, root)).body;
    await expect(row(ids.transfer!).locator('td[data-label="Amount"]').textContent()).resolves.toBe(`$1.25+ $${formatMicros(fee.amount)} fee`);
    // Times: UTC in the markup and on hover, the viewer's zone on the page.
    const time = row(ids.transfer!).locator("time");
    const at = (await time.getAttribute("datetime"))!;
    expect(at).toBe(expected.transactions.find((t) => t.id === ids.transfer)!.created_at);
    await expect(time.getAttribute("title")).resolves.toBe(`${at.slice(0, 10)} ${at.slice(11, 19)} UTC`);
    await expect(time.textContent()).resolves.toMatch(/EST|EDT|GMT-[45]/);
    await screenshot(page, "transactions-agents");
    await context.close();
  });

  it("filters by agent (with or without its sub-agents), rail, counterparty and amount, as the API's rows say", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    const all = (await listed()).transactions;

    await applyFilters(page, (p) => p.selectOption("#f-agent", ids.research!));
    expect(await rowIds(page)).toEqual([ids.x402]);
    await applyFilters(page, async (p) => {
      await p.selectOption("#f-agent", ids.research!);
      await p.getByLabel("and its sub-agents").check();
    });
    expect(await rowIds(page)).toEqual(all.filter((t) => t.id === ids.x402 || t.id === ids.x402sub).map((t) => t.id));
    expect(new Set(await column(page, "Agent"))).toEqual(new Set(["research", "scraper"]));
    await expect(page.locator("#position").textContent()).resolves.toBe("1–2 of 2");

    await applyFilters(page, (p) => p.selectOption("#f-rail", ["fiat"]));
    expect(await rowIds(page)).toEqual((await api<{ transactions: ApiTxn[] }>("/v1/transactions?type=payment", root)).body.transactions.map((t) => t.id));
    expect(await column(page, "Agent")).toEqual(["payroll", "payroll"]);

    await applyFilters(page, (p) => p.getByLabel("Counterparty contains").fill("90f79bf6"));
    expect(await rowIds(page)).toEqual([ids.transfer]);

    await applyFilters(page, async (p) => {
      await p.getByLabel("Amount from ($)").fill("1");
      await p.getByLabel("Amount to ($)").fill("2.75");
    });
    const micros = (t: ApiTxn) => (t.currency === "usd" ? t.amount * 10_000 : t.amount);
    expect(await rowIds(page)).toEqual(all.filter((t) => micros(t) >= 1_000_000 && micros(t) <= 2_750_000).map((t) => t.id));
    expect(await rowIds(page)).toEqual([ids.bank, ids.transfer]);
    await screenshot(page, "transactions-filtered-amount");

    // A filter the server cannot read is a 400 page, not a crash.
    const bad = await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions?min_usd=ten`);
    expect(bad!.status()).toBe(400);
    await context.close();
  });

  it("exports the filtered list as CSV: the API's rows, the agents' names, a header", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    await applyFilters(page, (p) => p.selectOption("#f-rail", ["x402", "usdc_transfer", "fiat"]));
    const link = page.getByRole("link", { name: /^Export these \d+ as CSV$/ });
    const href = (await link.getAttribute("href"))!;
    expect(href).toContain("rail=x402&rail=usdc_transfer&rail=fiat");
    const res = await page.request.get(`${server.baseUrl}${href}`);
    expect(res.headers()["content-type"]).toBe("text/csv; charset=utf-8");
    expect(res.headers()["content-disposition"]).toMatch(/^attachment; filename="transactions-prj_[^"]+\.csv"$/);
    const lines = (await res.text()).trim().split("\r\n");
    expect(lines[0]).toBe("id,created_at_utc,completed_at_utc,agent,agent_token,rail,type,status,counterparty,amount_usd,fee_usd,description,tx_hash,failure_code");
    const payments = (await listed()).transactions.filter((t) => t.type !== "usdc_fund");
    const rows = lines.slice(1).map((l) => l.split(","));
    expect(rows.map((r) => r[0])).toEqual(payments.map((t) => t.id));
    const byId = new Map(rows.map((r) => [r[0], r]));
    expect(byId.get(ids.bank!)!.slice(3, 11)).toEqual(["payroll", expect.stringMatching(/^aw_test_.+…$/), "fiat", "payment", expect.any(String), "Ann Lee (account ••••5678)", "2.50", expect.stringMatching(/^\d+\.\d{2,6}$/)]);
    expect(byId.get(ids.failing!)![13]).toBe("payout_failed");
    expect(byId.get(ids.transfer!)![8]).toBe(RECIPIENT);
    await context.close();
  });
});

describe("a transaction's page", () => {
  it("names the agent, the bank holder as the recipient, the rail in words, and a failure as a sentence with dollars", async () => {
    const context = await browser.newContext();
    const page = await signIn(context);
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions/${ids.failing}`);
    const facts = async () => Object.fromEntries(await page.locator("dl.facts").first().evaluate((dl) => [...dl.querySelectorAll("dt")].map((dt) => [dt.textContent, dt.nextElementSibling?.textContent ?? ""])));
    const f = await facts();
    expect(f).toMatchObject({ Agent: expect.stringMatching(/^payroll aw_test_.+…$/), Rail: "Bank (ACH)", Recipient: "Bo Tran (account ••••0000)", Amount: "$3.00" });
    expect(f.Merchant).toBeUndefined();
    await expect(page.locator("p.notice.error").textContent()).resolves.toBe("Failed: the bank or the payout provider could not complete this payment (R03: No account / unable to locate account). Correct the bank details and pay again.");
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}/transactions/${ids.transfer}`);
    expect(await facts()).toMatchObject({ Agent: expect.stringMatching(/^treasury /), Rail: "USDC transfer", Recipient: RECIPIENT });
    // The refusal above the agent's whole daily limit, in dollars, on the overview: worded from what the refusal
    // recorded (its window was not read, so nothing is said of what is left).
    await page.goto(`${server.baseUrl}/console/p/${server.projectId}`);
    await expect(page.locator("ul.refusals").textContent()).resolves.toContain("Refused: this payment of $3.00 is larger than the whole of the agent's daily limit of $2.00.");
    await context.close();
  });
});

describe("accessibility", () => {
  it.each([{ width: 1280, height: 900 }, { width: 375, height: 800 }])("the list and a transaction's page have no serious violations at $width px", async (viewport) => {
    const context = await browser.newContext({ bypassCSP: true, viewport });
    const page = await signIn(context);
    for (const path of [`transactions`, `transactions/${ids.failing}`]) {
      await page.goto(`${server.baseUrl}/console/p/${server.projectId}/${path}`);
      const violations = await seriousViolations(page);
      expect(violations.map((v) => `${path}: ${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`)).toEqual([]);
      await screenshot(page, `txlist-${path.split("?")[0]!.replace("/", "-")}-${viewport.width}`);
    }
    await context.close();
  });
});
