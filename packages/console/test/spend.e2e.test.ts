/**
 * The Spend page in a real browser against a real sandbox server (real SQLite, real local chain, the demo
 * x402 merchant, the sandbox bank): three named agents pay on the three rails, and the page's totals per
 * agent, counterparty and rail are the payments' as the API shows them, and each agent's burn is its
 * `GET /v1/limits`. No serious or critical axe-core violation at 375 px or at desktop width.
 */
import { describe, expect, it } from "vitest";
import { issueToken } from "../../server/src/services/tokens.ts";
import { poll } from "../../server/test/support/poll.ts";
import { formatMicros } from "../src/format.ts";
import { screenshot, seriousViolations } from "./support/browser.ts";
import { useServerAndBrowser } from "./support/serverAndBrowser.ts";

const { server, browser } = useServerAndBrowser({ x402Demo: true });

const ADDRESS_A = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const ADDRESS_B = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65";
const BANK = { name: "Ada Payee", account_number: "000123456789", routing_number: "021000021" };

async function api(path: string, token: string, body?: unknown): Promise<{ status: number; json: any }> {
  const res = await fetch(`${server.baseUrl}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

describe("the Spend page", () => {
  it("shows per-agent, per-counterparty and per-rail totals as the API has them, and burn as GET /v1/limits", async () => {
    const ctx = server.server.ctx;
    const demo = server.server.x402Demo!;
    await server.fund(30_000_000n);
    const limits = { spending_limits: [{ amount_usd: 20, interval: "daily" as const }, { amount_usd: 100, interval: "monthly" as const }] };
    const agent = async (name: string) => {
      const t = await issueToken(ctx, { projectId: server.projectId, permissions: ["read", "pay", "x402"], mode: "test", name, controls: limits });
      return { name, id: t.id, token: t.token };
    };
    const [researcher, shopper, accountant] = [await agent("researcher"), await agent("shopper"), await agent("accountant")];

    // Each agent pays on its own rail; the API's answers give the expected figures.
    type Paid = { agent: string; rail: string; counterparty: string; micros: number; fee: number; id: string };
    const paid: Paid[] = [];
    const pay = async (who: typeof researcher, body: unknown, counterparty: string) => {
      const r = await api("/v1/pay", who.token, body);
      expect([200, 201], JSON.stringify(r.json)).toContain(r.status);
      const toMicros = (n: number) => (r.json.currency === "usd" ? n * 10_000 : n);
      paid.push({ agent: who.id, rail: r.json.rail, counterparty, micros: toMicros(r.json.amount_charged), fee: toMicros(r.json.fee), id: r.json.id });
    };
    for (let i = 0; i < 2; i++) await pay(researcher, { recipient: demo.paidUrl, max_amount_usdc: demo.priceMicros }, `x402 ${new URL(demo.paidUrl).host}`);
    await pay(shopper, { recipient: ADDRESS_A, amount_usd: 2 }, `usdc_transfer ${ADDRESS_A.toLowerCase()}`);
    await pay(shopper, { recipient: ADDRESS_B, amount_usd: 1.5 }, `usdc_transfer ${ADDRESS_B.toLowerCase()}`);
    await pay(accountant, { recipient: BANK, amount_usd: 3 }, "fiat Ada Payee ****6789");
    // Every payment completed on its rail, as the API reports it.
    for (const p of paid) await poll(`${p.id} completed`, async () => ((await api(`/v1/transactions/${p.id}`, server.token)).json.status === "completed" ? true : undefined));

    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    await page.goto(`${server.baseUrl}/console/signin`);
    await page.getByLabel("Project API token").fill(server.token);
    await page.getByRole("button", { name: "Sign in with token" }).click();
    await page.waitForURL(/\/console\/p\/prj_/);
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Spend" }).click();
    await page.waitForURL(/\/spend$/);
    await expect(page.getByRole("heading", { level: 1 }).textContent()).resolves.toBe("Spend");

    const cell = async (table: string, key: string, column: "Amounts" | "Fees") =>
      Number(await page.locator(`table[data-table="${table}"] tr[data-key="${key}"] td[data-label="${column}"]`).getAttribute("data-micros"));
    const sumBy = (f: (p: Paid) => string) => {
      const out = new Map<string, { micros: number; fee: number }>();
      for (const p of paid) out.set(f(p), { micros: (out.get(f(p))?.micros ?? 0) + p.micros, fee: (out.get(f(p))?.fee ?? 0) + p.fee });
      return out;
    };
    for (const [table, by] of [["by-agent", sumBy((p) => p.agent)], ["by-counterparty", sumBy((p) => p.counterparty)], ["by-rail", sumBy((p) => p.rail)]] as const) {
      expect(await page.locator(`table[data-table="${table}"] tbody tr`).count()).toBe(by.size);
      for (const [key, want] of by) expect([table, key, await cell(table, key, "Amounts"), await cell(table, key, "Fees")]).toEqual([table, key, want.micros, want.fee]);
    }
    const total = paid.reduce((a, p) => a + p.micros + p.fee, 0);
    expect(await page.locator('[data-figure="total"]').textContent()).toBe(`$${formatMicros(total)}`);
    await expect(page.locator("svg[data-chart='by-agent'] rect").count()).resolves.toBe(3);

    // Burn: each agent's daily and monthly windows are its GET /v1/limits windows.
    for (const a of [researcher, shopper, accountant]) {
      const windows = (await api("/v1/limits", a.token)).json.windows.filter((w: { scope: string }) => w.scope === "token");
      expect(windows.map((w: { interval: string }) => w.interval)).toEqual(["daily", "monthly"]);
      for (const w of windows) {
        const row = page.locator(`table[data-table="burn"] tr[data-key="${a.id}:${w.interval}"]`);
        expect([a.name, w.interval, Number(await row.locator('td[data-label="Spent"]').getAttribute("data-usd")), Number(await row.locator('td[data-label="Limit"]').getAttribute("data-usd"))]).toEqual([a.name, w.interval, w.spent_usd, w.limit_usd]);
        await expect(row.locator('td[data-label="At this rate"]').textContent()).resolves.toMatch(/^(not at this rate|at this rate: limit reached around .+ UTC)$/);
      }
      // The agent's amount today is its daily window's spend.
      expect(await cell("by-agent", a.id, "Amounts")).toBe(Math.round(windows[0].spent_usd * 1_000_000));
    }

    for (const period of ["week", "month"]) {
      await page.getByRole("navigation", { name: "Period" }).getByRole("link", { name: period === "week" ? "This week" : "This month" }).click();
      await page.waitForURL(new RegExp(`period=${period}$`));
      expect(await cell("by-rail", "fiat", "Amounts")).toBe(sumBy((p) => p.rail).get("fiat")!.micros);
    }

    for (const [width, height, name] of [[375, 800, "spend-375"], [1280, 900, "spend-desktop"]] as const) {
      await page.setViewportSize({ width, height });
      await page.goto(`${server.baseUrl}/console/p/${server.projectId}/spend?period=day`);
      expect(await seriousViolations(page), `${width}px`).toEqual([]);
      await screenshot(page, name);
    }
    await context.close();
  });
});
