/**
 * `npm run bench -- export`: the console's CSV export (`GET /console/p/:pid/transactions.csv`) of a project
 * with 1,000,000 transactions (about 520,000 rows: a payment's fee is on its payment's row; `--rows 1920000`
 * for a million rows), to show that the server's memory stays flat while it streams: the rows are
 * written as they are read, a page at a time. Reports the rows and bytes received, the time, and the
 * process's resident memory before the export, at each tenth of it, and at its peak (sampled every 25 ms,
 * and the kernel's own high-water mark). The client reads the body as a stream and keeps nothing.
 */
import { request } from "node:http";
import { parseArgs } from "node:util";
import { UsageError, log, machine, printTable, writeResult } from "./lib.ts";
import { type BenchDialect, createBenchContext } from "./support/benchContext.ts";
import { seedTransactions } from "./support/seedTransactions.ts";
import { startConsoleServer } from "./support/consoleServer.ts";

const HELP = `npm run bench -- export [flags]
  --db sqlite|postgres   database (default sqlite)
  --rows N               transactions to seed (default 1000000)`;

const MiB = 1024 * 1024;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { db: { type: "string", default: "sqlite" }, rows: { type: "string", default: "1000000" }, help: { type: "boolean", default: false } } });
  if (values.help) return void console.log(HELP);
  const rows = Number(values.rows);
  const dialect = values.db as BenchDialect;
  if (!Number.isSafeInteger(rows) || rows < 100) throw new UsageError("--rows must be an integer ≥ 100");
  if (dialect !== "sqlite" && dialect !== "postgres") throw new UsageError("--db must be sqlite or postgres");
  const host = machine();
  console.log(`CSV export benchmark — ${dialect}, ${rows.toLocaleString("en-US")} transactions`);
  console.log(`machine: ${host.cpus} × ${host.cpuModel}, ${host.memoryGiB} GiB, Node ${host.node}; load average ${host.loadAverage1m} at start`);

  const bench = await createBenchContext({ dialect, rateLimitPerMinute: 1_000_000_000, logLevel: "warn" });
  try {
    const project = await bench.ctx.ledger.projects.create({ name: "bench", plan: "business" });
    log(`seeding ${rows.toLocaleString("en-US")} transactions…`);
    const seed = await seedTransactions(bench, project.id, rows);
    log(`seeded in ${(seed.ms / 1000).toFixed(1)} s`);
    const { base, cookie, close } = await startConsoleServer(bench, project.id);
    try {
      (globalThis as { gc?: () => void }).gc?.();
      const before = process.memoryUsage().rss;
      const maxRssBefore = process.resourceUsage().maxRSS * 1024;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 25);
      const started = performance.now();
      const tenths: { rows: number; rss: number }[] = [];
      const { lines, bytes, status } = await new Promise<{ lines: number; bytes: number; status: number }>((resolve, reject) => {
        const req = request(`${base}/console/p/${project.id}/transactions.csv`, { headers: { cookie: `aw_console=${cookie}` } }, (res) => {
          let lines = 0;
          let bytes = 0;
          const step = Math.ceil(rows / 20);
          let next = step;
          res.on("data", (chunk: Buffer) => {
            bytes += chunk.length;
            for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
            if (lines >= next) {
              tenths.push({ rows: lines - 1, rss: process.memoryUsage().rss });
              next += step;
            }
          });
          res.on("end", () => resolve({ lines, bytes, status: res.statusCode ?? 0 }));
          res.on("error", reject);
        });
        req.on("error", reject);
        req.end();
      });
      const ms = performance.now() - started;
      clearInterval(sampler);
      const maxRssAfter = process.resourceUsage().maxRSS * 1024;
      if (status !== 200) throw new Error(`the export answered ${status}`);
      const exported = lines - 1;
      printTable(
        ["measure", "value"],
        [
          ["rows exported (header aside)", exported.toLocaleString("en-US")],
          ["bytes", `${(bytes / MiB).toFixed(1)} MiB`],
          ["time", `${(ms / 1000).toFixed(1)} s (${Math.round(exported / (ms / 1000)).toLocaleString("en-US")} rows/s)`],
          ["RSS before the export", `${(before / MiB).toFixed(0)} MiB`],
          ["RSS peak during the export (sampled)", `${(peak / MiB).toFixed(0)} MiB`],
          ["RSS growth at peak", `${((peak - before) / MiB).toFixed(0)} MiB`],
          ["process max RSS before / after (kernel)", `${(maxRssBefore / MiB).toFixed(0)} / ${(maxRssAfter / MiB).toFixed(0)} MiB`],
        ],
      );
      console.log(`RSS along the export (rows received: MiB): ${tenths.map((t) => `${t.rows.toLocaleString("en-US")}: ${(t.rss / MiB).toFixed(0)}`).join(", ")}`);
      console.log(`result: ${writeResult("export", { machine: host, dialect, rows, exported, bytes, ms, rssBefore: before, rssPeak: peak, maxRssBefore, maxRssAfter, along: tenths })}`);
    } finally {
      await close();
    }
  } finally {
    await bench.close();
  }
}
