/**
 * `npm run bench -- console`: the console's transactions page of a project with 1,000,000 transactions,
 * in Debian's Chromium. Measures, from the browser's own navigation timing, the time until the page is
 * interactive (`domInteractive`) and fully loaded (`loadEventEnd`) for the first load, for the next page
 * (the cursor), and for a filter change (when the list accepts filters). Target: interactive < 1 s.
 * `--page spend`: the Spend page of a project with 1,000,000 payments by five agents, each period
 * (day, week, month), as the server answers a signed-in HTTP GET. Target: p99 < 1 s.
 */
import { parseArgs } from "node:util";
import { launchBrowser } from "../packages/console/test/support/browser.ts";
import { UsageError, log, machine, percentile, printTable, verdict, writeResult } from "./lib.ts";
import { createBenchContext } from "./support/benchContext.ts";
import { seedPayments } from "./support/seedPayments.ts";
import { seedTransactions } from "./support/seedTransactions.ts";
import { startConsoleServer } from "./support/consoleServer.ts";
import { createToken } from "../packages/server/src/services/tokens.ts";

const TARGET_INTERACTIVE_MS = 1_000;

const HELP = `npm run bench -- console [flags]
  --rows N      transactions (or payments) to seed (default 1000000)
  --samples N   page loads per case (default 30)
  --page P      transactions (default) or spend`;

type Timing = { interactiveMs: number; loadedMs: number };

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { rows: { type: "string", default: "1000000" }, samples: { type: "string", default: "30" }, page: { type: "string", default: "transactions" }, help: { type: "boolean", default: false } } });
  if (values.help) return void console.log(HELP);
  const rows = Number(values.rows);
  const samples = Number(values.samples);
  if (!Number.isSafeInteger(rows) || rows < 100) throw new UsageError("--rows must be an integer ≥ 100");
  if (!Number.isSafeInteger(samples) || samples < 1) throw new UsageError("--samples must be a positive integer");
  if (values.page === "spend") return runSpend(rows, samples);
  if (values.page !== "transactions") throw new UsageError("--page is transactions or spend");
  const host = machine();
  console.log(`console benchmark — SQLite, ${rows.toLocaleString("en-US")} transactions, ${samples} loads per case`);
  console.log(`machine: ${host.cpus} × ${host.cpuModel}, ${host.memoryGiB} GiB, Node ${host.node}; load average ${host.loadAverage1m} at start`);

  const bench = await createBenchContext({ dialect: "sqlite", rateLimitPerMinute: 1_000_000_000, logLevel: "warn" });
  const browser = await launchBrowser();
  try {
    const project = await bench.ctx.ledger.projects.create({ name: "bench", plan: "business" });
    await bench.ctx.ledger.projects.setWalletAddress(project.id, bench.ctx.custody.addressOf(project.wallet_index));
    log(`seeding ${rows.toLocaleString("en-US")} transactions…`);
    const seed = await seedTransactions(bench, project.id, rows);
    log(`seeded in ${(seed.ms / 1000).toFixed(1)} s`);
    const { base, cookie, close } = await startConsoleServer(bench, project.id);
    try {
      const context = await browser.newContext();
      await context.addCookies([{ name: "aw_console", value: cookie, url: base }]);
      const page = await context.newPage();
      const list = `${base}/console/p/${project.id}/transactions`;
      const timing = async (): Promise<Timing> =>
        page.evaluate(() => {
          const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
          return { interactiveMs: n.domInteractive - n.startTime, loadedMs: n.loadEventEnd - n.startTime };
        });
      const measure = async (name: string, go: () => Promise<unknown>): Promise<{ name: string; t: Timing[] }> => {
        await go(); // one unmeasured warm-up
        const t: Timing[] = [];
        for (let i = 0; i < samples; i++) {
          await go();
          await page.waitForLoadState("load");
          t.push(await timing());
        }
        return { name, t };
      };
      const rowsShown = async () => page.locator("tbody tr").count();
      const cases = [await measure("first load", () => page.goto(list, { waitUntil: "load" }))];
      if ((await rowsShown()) !== 50) throw new Error(`the first page shows ${await rowsShown()} rows, not 50`);
      const next = page.getByRole("link", { name: "Next page" });
      if (await next.count()) {
        cases.push(
          await measure("next page (cursor)", async () => {
            await page.goto(list, { waitUntil: "load" });
            await page.getByRole("link", { name: "Next page" }).click();
          }),
        );
      }
      if (await page.locator("#f-type:not([disabled])").count()) {
        cases.push(
          await measure("filter change (type = deposit, status = completed)", async () => {
            await page.goto(list, { waitUntil: "load" });
            await page.selectOption("#f-type", ["usdc_fund"]);
            await page.selectOption("#f-status", ["completed"]);
            await page.getByRole("button", { name: "Apply" }).click();
          }),
        );
      }
      const table = cases.map(({ name, t }) => {
        const inter = t.map((x) => x.interactiveMs).sort((a, b) => a - b);
        const loaded = t.map((x) => x.loadedMs).sort((a, b) => a - b);
        const p99 = percentile(inter, 0.99);
        return { name, p50: percentile(inter, 0.5), p99, loadedP50: percentile(loaded, 0.5), loadedP99: percentile(loaded, 0.99), pass: p99 < TARGET_INTERACTIVE_MS };
      });
      printTable(
        ["case", "interactive p50 ms", "interactive p99 ms", "loaded p50 ms", "loaded p99 ms", `< ${TARGET_INTERACTIVE_MS} ms`],
        table.map((r) => [r.name, r.p50.toFixed(0), r.p99.toFixed(0), r.loadedP50.toFixed(0), r.loadedP99.toFixed(0), verdict(r.pass)]),
      );
      console.log(`result: ${writeResult("console", { machine: host, rows, samples, cases: table })}`);
    } finally {
      await close();
    }
  } finally {
    await browser.close();
    await bench.close();
  }
}

const AGENTS = ["researcher", "shopper", "translator", "scheduler", "reporter"];

/** The Spend page of a project with `rows` payments by five agents with limits: a signed-in GET per period, timed at the client. */
async function runSpend(rows: number, samples: number): Promise<void> {
  const host = machine();
  console.log(`console Spend page benchmark — SQLite, ${rows.toLocaleString("en-US")} payments by ${AGENTS.length} agents, ${samples} loads per period`);
  console.log(`machine: ${host.cpus} × ${host.cpuModel}, ${host.memoryGiB} GiB, Node ${host.node}; load average ${host.loadAverage1m} at start`);
  const bench = await createBenchContext({ dialect: "sqlite", rateLimitPerMinute: 1_000_000_000, logLevel: "warn" });
  try {
    const project = await bench.ctx.ledger.projects.create({ name: "bench", plan: "business" });
    const controls = JSON.stringify({ limits: [{ interval: "daily", amountMicros: 5_000_000_000 }, { interval: "monthly", amountMicros: 90_000_000_000 }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null });
    const agents = await Promise.all(AGENTS.map((name) => createToken(bench.ctx, { projectId: project.id, permissions: ["read", "pay", "x402"], mode: "test", name, spendingControls: controls })));
    log(`seeding ${rows.toLocaleString("en-US")} payments…`);
    const seed = seedPayments(bench.sqlitePath!, project.id, agents.map((a) => a.id), rows);
    log(`seeded in ${(seed.ms / 1000).toFixed(1)} s`);
    const { base, cookie, close } = await startConsoleServer(bench, project.id);
    try {
      const table = [];
      for (const period of ["day", "week", "month"] as const) {
        const get = async () => {
          const t0 = performance.now();
          const res = await fetch(`${base}/console/p/${project.id}/spend?period=${period}`, { headers: { cookie: `aw_console=${cookie}` } });
          const body = await res.text();
          const ms = performance.now() - t0;
          if (res.status !== 200 || !body.includes("By counterparty")) throw new Error(`the Spend page answered ${res.status}`);
          return ms;
        };
        await get(); // one unmeasured warm-up
        const t: number[] = [];
        for (let i = 0; i < samples; i++) t.push(await get());
        t.sort((a, b) => a - b);
        table.push({ period, p50: percentile(t, 0.5), p99: percentile(t, 0.99), pass: percentile(t, 0.99) < TARGET_INTERACTIVE_MS });
      }
      printTable(["period", "p50 ms", "p99 ms", `< ${TARGET_INTERACTIVE_MS} ms`], table.map((r) => [r.period, r.p50.toFixed(1), r.p99.toFixed(1), verdict(r.pass)]));
      console.log(`result: ${writeResult("console-spend", { machine: host, rows, samples, seedMs: seed.ms, cases: table })}`);
    } finally {
      await close();
    }
  } finally {
    await bench.close();
  }
}
