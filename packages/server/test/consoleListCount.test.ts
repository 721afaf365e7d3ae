// The console list's place counts on real SQLite and PostgreSQL with a small cap (3 instead of 10,000): where
// rows are counted by reading them (an agent, a counterparty, an amount range) a count stops past the cap and
// the page says "of 3+"; where the API's per-day counters answer (rail, type, status, time) it stays exact.
// The page's text is read from the console's own route, its list answered by the service with the cap.
import { registerConsole } from "@agentwallet/console";
import Fastify from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { consoleBackend } from "../src/http/console.ts";
import { listPage } from "../src/services/console/transactionList.ts";
import { createSession } from "../src/services/console/sessions.ts";
import { createToken } from "../src/services/tokens.ts";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { fundedProject, usdcPayment } from "./support/holds.ts";

const CAP = 3;
const CAFE = "0x000000000000000000000000000000000000cafe";
const BEEF = "0x000000000000000000000000000000000000beef";

describe.each(dialects)("the console list's capped counts (%s)", (dialect) => {
  let t: TestContext;
  let projectId: string;
  let agent: string;
  let app: ReturnType<typeof Fastify>;
  let cookie: string;

  beforeAll(async () => {
    t = await createTestContext(dialect);
    projectId = await fundedProject(t.ctx);
    const root = await createToken(t.ctx, { projectId, permissions: ["read", "pay"], mode: "test", name: "root" });
    agent = (await createToken(t.ctx, { projectId, permissions: ["read", "pay"], mode: "test", name: "agent" })).id;
    // Nine transfers: five of 1 USDC to …cafe (by the agent), three of 1 USDC to …beef, one of 5 USDC to …beef.
    const seeds = [...Array(5).fill([CAFE, 1, agent]), ...Array(3).fill([BEEF, 1, root.id]), [BEEF, 5, root.id]] as [string, number, string][];
    for (const [recipient, usd, tokenId] of seeds) {
      const r = await t.ctx.ledger.payments.hold(usdcPayment(projectId, usd * 1_000_000, 10, { recipient, tokenId }));
      expect(r.kind).toBe("held");
    }
    // The console's routes, its list answered with the small cap, in pages of 2 (of 50) to match it.
    const backend = consoleBackend(t.ctx, {});
    app = Fastify();
    registerConsole(app, {
      backend: { ...backend, listPage: (p, f, page) => listPage(t.ctx, p, f, { ...page, limit: 2 }, { countedMax: CAP }) },
      sandbox: true,
      explorerTxUrl: null,
      filters: true,
      mcpCommand: { command: "node", args: [] },
      x402Example: null,
      refusalStatus: () => undefined,
      busy: () => false,
    });
    await app.ready();
    cookie = `aw_console=${(await createSession(t.ctx, { kind: "token", tokenId: root.id })).id}`;
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  const page = (filters: Parameters<typeof listPage>[2], p: Parameters<typeof listPage>[3] = { limit: 2 }) => listPage(t.ctx, projectId, filters, p, { countedMax: CAP });
  const place = (p: Awaited<ReturnType<typeof page>>) => ({ total: p.total, total_capped: p.total_capped, position: p.position, position_capped: p.position_capped, has_newer: p.has_newer, has_older: p.has_older });
  /** The console page's place text and export link for a query. */
  async function shown(query: string): Promise<{ position: string; exportLink: string }> {
    const res = await app.inject({ method: "GET", url: `/console/p/${projectId}/transactions?${query}`, headers: { cookie } });
    expect(res.statusCode, res.body.slice(0, 500)).toBe(200);
    return { position: /id="position">([^<]*)</.exec(res.body)![1]!, exportLink: />(Export these [^<]* as CSV)</.exec(res.body)![1]! };
  }

  test("behavior: a counterparty's count stops past the cap: 'of 3+', a page beyond the cap is past the first 3, and going back still has older rows", async () => {
    const one = await page({ counterparty: "cafe" });
    expect(place(one)).toEqual({ total: CAP, total_capped: true, position: 1, position_capped: false, has_newer: false, has_older: true });
    const two = await page({ counterparty: "cafe" }, { limit: 2, starting_after: one.rows.at(-1)!.id });
    expect(place(two)).toEqual({ total: CAP, total_capped: true, position: 3, position_capped: false, has_newer: true, has_older: true });
    const three = await page({ counterparty: "cafe" }, { limit: 2, starting_after: two.rows.at(-1)!.id });
    expect(three.rows).toHaveLength(1);
    expect(place(three)).toEqual({ total: CAP, total_capped: true, position: CAP + 1, position_capped: true, has_newer: true, has_older: false });
    const back = await page({ counterparty: "cafe" }, { limit: 2, ending_before: three.rows[0]!.id });
    expect(back.rows.map((r) => r.id)).toEqual(two.rows.map((r) => r.id));
    expect(place(back)).toEqual({ total: CAP, total_capped: true, position: 3, position_capped: false, has_newer: true, has_older: true });

    expect(await shown("counterparty=cafe")).toEqual({ position: "1–2 of 3+", exportLink: "Export these 3+ as CSV" });
    expect((await shown(`counterparty=cafe&starting_after=${two.rows.at(-1)!.id}`)).position).toBe("Past the first 3 of 3+");
  });

  test("behavior: an agent's count stops past the cap too", async () => {
    expect(place(await page({ agent }))).toMatchObject({ total: CAP, total_capped: true });
    expect((await shown(`agent=${agent}`)).position).toBe("1–2 of 3+");
  });

  test("default: at most the cap rows match: the count is exact, with no '+'", async () => {
    // Exactly the cap: three 1 USDC transfers to …beef and one of 5; an amount range of 1 takes the three.
    expect(place(await page({ counterparty: "beef", max_usd: "1" }))).toEqual({ total: CAP, total_capped: false, position: 1, position_capped: false, has_newer: false, has_older: true });
    expect(place(await page({ min_usd: "5" }))).toEqual({ total: 1, total_capped: false, position: 1, position_capped: false, has_newer: false, has_older: false });
    expect(await shown("counterparty=beef&max_usd=1")).toEqual({ position: "1–2 of 3", exportLink: "Export these 3 as CSV" });
  });

  test("default: filters the per-day counters answer are counted exactly, whatever the cap", async () => {
    const all = await page({ rail: ["usdc_transfer"] });
    expect(place(all)).toEqual({ total: 9, total_capped: false, position: 1, position_capped: false, has_newer: false, has_older: true });
    const next = await page({ rail: ["usdc_transfer"] }, { limit: 2, starting_after: all.rows.at(-1)!.id });
    expect(place(next)).toMatchObject({ total: 9, position: 3, position_capped: false });
    expect((await shown("rail=usdc_transfer")).position).toBe("1–2 of 9");
  });
});
