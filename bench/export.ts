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
import { csvFields } from "../packages/console/src/csv.ts";

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
    const { base, cookie, token, close } = await startConsoleServer(bench, project.id);
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
      // After the measurement, so the check's own memory is not counted: the file again, against the API.
      log("checking the file against GET /v1/transactions, row for row…");
      const checked = await checkAgainstApi(base, cookie, token, project.id);
      if (checked !== exported) throw new Error(`the second export had ${checked} rows, the first ${exported}`);
      console.log(`the file equals GET /v1/transactions row for row: ${checked.toLocaleString("en-US")} rows (id, time, type, status, amount, and each payment's fee on its row)`);
      console.log(`result: ${writeResult("export", { machine: host, dialect, rows, exported, bytes, ms, rssBefore: before, rssPeak: peak, maxRssBefore, maxRssAfter, along: tenths, matchesApi: checked })}`);
    } finally {
      await close();
    }
  } finally {
    await bench.close();
  }
}

const LISTED = "usdc_fund,payment,x402_payment,usdc_transfer";
type ApiTxn = { id: string; type: string; status: string; amount: number; currency: string; created_at: string; payment_id?: string | null };

/**
 * Streams the export again and walks it beside the API's pages of the listed types (newest first, as the file
 * is): each line must be the next transaction, with its payment's fee (a `platform_fee` of the same payment)
 * beside it. The fees are read first into a map; nothing else is kept. Answers the rows checked.
 */
async function checkAgainstApi(base: string, cookie: string, token: string, projectId: string): Promise<number> {
  const pages = async function* (query: string): AsyncGenerator<ApiTxn> {
    for (let after = ""; ; ) {
      const res = await fetch(`${base}/v1/transactions?limit=100&${query}${after ? `&starting_after=${after}` : ""}`, { headers: { authorization: `Bearer ${token}` } });
      if (res.status !== 200) throw new Error(`GET /v1/transactions answered ${res.status}`);
      const page = (await res.json()) as { transactions: ApiTxn[]; has_more: boolean };
      yield* page.transactions;
      if (!page.has_more) return;
      after = page.transactions[page.transactions.length - 1]!.id;
    }
  };
  const usd = (amount: number, currency: string) => {
    const m = currency === "usd" ? amount * 10_000 : amount;
    return `${Math.floor(m / 1e6)}.${String(m % 1e6).padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")}`;
  };
  const feeOf = new Map<string, string>();
  // A fee is its payment's: by the payment's id where the row names it, else by its instant (the seeded
  // history's events are apart, and a payment's fee row has its payment's instant).
  for await (const f of pages("type=platform_fee")) feeOf.set(f.payment_id ?? f.created_at, usd(f.amount, f.currency));
  const listed = pages(`type=${LISTED}`);
  const res = await fetch(`${base}/console/p/${projectId}/transactions.csv`, { headers: { cookie: `aw_console=${cookie}` } });
  if (res.status !== 200 || !res.body) throw new Error(`the export answered ${res.status}`);
  const decoder = new TextDecoder();
  let rest = "";
  let n = -1; // the header first
  const check = async (line: string) => {
    if (n++ < 0) return;
    const next = await listed.next();
    if (next.done) throw new Error(`the file has more rows than the API: ${line}`);
    const a = next.value;
    const cells = csvFields(line);
    const want = [a.id, a.created_at, a.type, a.status, usd(a.amount, a.currency), (a.type === "usdc_fund" ? undefined : (feeOf.get(a.payment_id ?? a.id) ?? feeOf.get(a.created_at))) ?? ""];
    const got = [cells[0], cells[1], cells[6], cells[7], cells[9], cells[10]];
    if (want.join() !== got.join()) throw new Error(`row ${n}: the file has ${got.join()} where the API has ${want.join()}`);
  };
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
    const lines = (rest + decoder.decode(chunk, { stream: true })).split("\r\n");
    rest = lines.pop()!;
    for (const line of lines) await check(line);
  }
  if (rest) await check(rest);
  if (!(await listed.next()).done) throw new Error(`the API lists more rows than the file's ${n}`);
  return n;
}

