/**
 * `npm run bench -- console`: the console's transactions page of a project with 1,000,000 transactions,
 * in Debian's Chromium. Measures, from the browser's own navigation timing, the time until the page is
 * interactive (`domInteractive`) and fully loaded (`loadEventEnd`) for the first load, for the next page
 * (the cursor), and for a filter change (when the list accepts filters). Target: interactive < 1 s.
 */
import { parseArgs } from "node:util";
import { launchBrowser } from "../packages/console/test/support/browser.ts";
import { UsageError, log, machine, percentile, printTable, verdict, writeResult } from "./lib.ts";
import { createBenchContext } from "./support/benchContext.ts";
import { seedTransactions } from "./support/seedTransactions.ts";
import { startConsoleServer } from "./support/consoleServer.ts";

const TARGET_INTERACTIVE_MS = 1_000;

const HELP = `npm run bench -- console [flags]
  --rows N      transactions to seed (default 1000000)
  --samples N   page loads per case (default 30)`;

type Timing = { interactiveMs: number; loadedMs: number };

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { rows: { type: "string", default: "1000000" }, samples: { type: "string", default: "30" }, help: { type: "boolean", default: false } } });
  if (values.help) return void console.log(HELP);
  const rows = Number(values.rows);
  const samples = Number(values.samples);
  if (!Number.isSafeInteger(rows) || rows < 100) throw new UsageError("--rows must be an integer ≥ 100");
  if (!Number.isSafeInteger(samples) || samples < 1) throw new UsageError("--samples must be a positive integer");
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
