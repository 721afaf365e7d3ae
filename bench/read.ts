/**
 * `npm run bench -- read`: the read path of the API against a bare Fastify route, in one run.
 * Seeds a project with 1,000,000 transactions, starts the real app over a real database, and
 * measures GET /v1/balance and GET /v1/transactions (offset 0, half way, last page) under load and
 * one request at a time. Targets: balance ≥ 0.5 × bare Fastify req/s; a transaction page p99 ≤ 5 ms.
 * With `--behind nginx` (PostgreSQL): the balance and the first page on one `agentwallet serve` process, then
 * through nginx in front of two, and their ratios (support/readBehindNginx.ts).
 */
import { parseArgs } from "node:util";
import type { Permission } from "@agentwallet/api";
import { createApp } from "../packages/server/src/http/app.ts";
import { tokenAuth } from "../packages/server/src/http/auth.ts";
import { createMetrics } from "../packages/server/src/http/metrics.ts";
import { createToken } from "../packages/server/src/services/tokens.ts";
import { BALANCE_SHAPED_BODY, type Cell, type LoadResult, type ProbeResult, UsageError, formatNumber, log, machine, printTable, probeLatency, runLoad, startBareFastify, verdict, writeResult } from "./lib.ts";
import { type BenchDialect, createBenchContext } from "./support/benchContext.ts";
import { readBehindNginx } from "./support/readBehindNginx.ts";
import { readDiagnostics } from "./support/readDiagnostics.ts";
import { seedTransactions } from "./support/seedTransactions.ts";
import { dbOf } from "../packages/server/src/ledger/connection.ts";

const TARGET_BALANCE_RATIO_MIN = 0.5;
const TARGET_PAGE_P99_MS_MAX = 5;
const PAGE_LIMIT = 50;
/** Far above any rate this machine reaches: the limiter runs on every request but never refuses. */
const RATE_LIMIT_PER_MINUTE = 1_000_000_000;
/** The limiter keeps a 60 s log of timestamps per token; past that window its cost grows with the log. */
const RATE_WINDOW_SECONDS = 60;

const HELP = `npm run bench -- read [flags]
  --db sqlite|postgres   database (default sqlite: a WAL file in a temp dir, synchronous=FULL)
  --pg-url URL           PostgreSQL server (default $TEST_DATABASE_URL or postgres://postgres@127.0.0.1:5432/test);
                         a fresh schema is created and dropped afterwards
  --rows N               transactions to seed (default 1000000)
  --duration S           seconds of load per endpoint (default 10)
  --warmup S             unmeasured seconds of load before each (default 2)
  --connections N        concurrent connections under load (default 20)
  --samples N            sequential requests per endpoint for single-request latency (default 500)
  --probe-seconds S      time budget for those sequential requests per endpoint (default 60)
  --log-level L          service log level; request logs go to /dev/null (default warn)
  --no-diagnostics       skip the diagnostic routes, the in-process breakdown and the query plans
  --filters-only         measure only the filtered and cursor pages (skips the load runs)
  --behind nginx         with --db postgres: GET /v1/balance and the first transaction page on one \`agentwallet serve\`
                         process reached directly, then through nginx (deploy/nginx/agentwallet.conf, TLS, keep-alive)
                         in front of two processes on the same database, on a local chain; prints proxy/direct per figure
                         (no bare route, diagnostics or filtered pages)`;

/**
 * A diagnostic scenario is measured and shown but is not a target of the issue. A `filter` scenario is a
 * filtered or cursor page: measured one request at a time only (its target is that latency), `rows` the
 * page size it must answer with.
 */
type Scenario = { name: string; key: string; url: string; authenticated: boolean; diagnostic?: boolean; page?: { offset: number }; filter?: { rows: number } };
/** `loadAverage1m`: the machine's 1-minute load average when the measurement ended (2 cores). */
type Measured = { scenario: Scenario; load: LoadResult; single: ProbeResult; loadAverage1m: number };

const FLAGS = {
  db: { type: "string", default: "sqlite" },
  "pg-url": { type: "string" },
  rows: { type: "string", default: "1000000" },
  duration: { type: "string", default: "10" },
  warmup: { type: "string", default: "2" },
  connections: { type: "string", default: "20" },
  samples: { type: "string", default: "500" },
  "probe-seconds": { type: "string", default: "60" },
  "log-level": { type: "string", default: "warn" },
  "no-diagnostics": { type: "boolean", default: false },
  "filters-only": { type: "boolean", default: false },
  behind: { type: "string" },
  help: { type: "boolean", default: false },
} as const;

export async function run(args: string[]): Promise<void> {
  const { values } = parseFlags(args);
  if (values.help) return void console.log(HELP);
  if (values.db !== "sqlite" && values.db !== "postgres") throw new UsageError(`--db must be sqlite or postgres (got "${values.db}")`);
  const dialect: BenchDialect = values.db;
  const rows = positiveInt("rows", values.rows, PAGE_LIMIT * 2);
  const durationSeconds = positiveInt("duration", values.duration, 1);
  const warmupSeconds = positiveInt("warmup", values.warmup, 0);
  const connections = positiveInt("connections", values.connections, 1);
  const samples = positiveInt("samples", values.samples, 10);
  const probeSeconds = positiveInt("probe-seconds", values["probe-seconds"], 1);
  const diagnose = !values["no-diagnostics"];
  const behind = values.behind;
  if (behind !== undefined && behind !== "nginx") throw new UsageError(`--behind takes nginx (got "${behind}")`);
  if (behind && dialect !== "postgres") throw new UsageError("--behind nginx runs two server processes on one database: it needs --db postgres (a SQLite file serves one process)");
  if (behind && values["filters-only"]) throw new UsageError("--behind nginx measures the balance and the first page, --filters-only the filtered pages: choose one");
  const settings = { dialect, rows, durationSeconds, warmupSeconds, connections, samples, probeSeconds, pageLimit: PAGE_LIMIT, logLevel: values["log-level"], rateLimitPerMinute: RATE_LIMIT_PER_MINUTE, ...(behind ? { behind } : {}) };

  const host = machine();
  console.log(`read benchmark — ${dialect}, ${rows.toLocaleString("en-US")} transactions`);
  if (behind) console.log("shape: one agentwallet serve process reached directly over http, then nginx with TLS in front of two (live mode, local chain)");
  console.log(`machine: ${host.cpus} × ${host.cpuModel}, ${host.memoryGiB} GiB, Node ${host.node}, ${host.os}; load average ${host.loadAverage1m} at start`);
  console.log("note: cores are shared with other work on this machine and with the load generator (a worker thread);");
  console.log("      compare figures within one run, not across runs.");
  console.log(`load: ${connections} connections, ${warmupSeconds} s warm-up + ${durationSeconds} s per endpoint; single-request latency: ${samples} sequential requests on 1 connection`);
  console.log(`rate limiter: ${behind ? "each process's memory store" : "memory store"}, ${RATE_LIMIT_PER_MINUTE.toLocaleString("en-US")} requests/min per token (not throttled), a fresh token per measurement`);
  if (warmupSeconds + durationSeconds >= RATE_WINDOW_SECONDS) {
    console.log(`warning: ${warmupSeconds + durationSeconds} s of load per token exceeds the limiter's ${RATE_WINDOW_SECONDS} s window; its per-request cost will grow`);
  }

  const bench = await createBenchContext({ dialect, rateLimitPerMinute: RATE_LIMIT_PER_MINUTE, logLevel: values["log-level"], postgresUrl: values["pg-url"] });
  const cleanup: (() => Promise<void>)[] = [() => bench.close()];
  const onSignal = () => void closeAll(cleanup).finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  try {
    log(`database: ${bench.where}`);
    const project = await bench.ctx.ledger.projects.create({ name: "bench", plan: "business" });
    await bench.ctx.ledger.projects.setWalletAddress(project.id, bench.ctx.custody.addressOf(project.wallet_index));

    log(`seeding ${rows.toLocaleString("en-US")} transactions…`);
    let nextReport = rows / 4;
    const seed = await seedTransactions(bench, project.id, rows, (done) => {
      if (done < nextReport) return;
      log(`  ${done.toLocaleString("en-US")} rows`);
      nextReport += rows / 4;
    });
    log(`seeded ${rows.toLocaleString("en-US")} rows in ${(seed.ms / 1000).toFixed(1)} s (${Math.round(seed.rowsPerSec).toLocaleString("en-US")} rows/s)`);
    if (behind) {
      const { logLevel, rateLimitPerMinute } = settings;
      return await readBehindNginx(bench, { projectId: project.id, rows, pageLimit: PAGE_LIMIT, connections, durationSeconds, warmupSeconds, samples, probeSeconds, logLevel, rateLimitPerMinute, settings, host, seed, onStop: (stop) => cleanup.unshift(stop) });
    }

    const app = createApp(bench.ctx, { metrics: createMetrics({ defaultMetrics: true }) });
    if (diagnose) {
      // Rungs between bare Fastify and GET /v1/balance, added to this instance only: the app's
      // hooks alone (request id, metrics, request log), then with its guard (token lookup and
      // rate limit), both answering a static body; GET /v1/balance adds the balance read.
      app.get("/_bench/hooks-only", async () => BALANCE_SHAPED_BODY);
      app.get("/_bench/guard-only", { preHandler: tokenAuth(bench.ctx, "read") }, async () => BALANCE_SHAPED_BODY);
    }
    const appUrl = await app.listen({ host: "127.0.0.1", port: 0 });
    cleanup.unshift(() => app.close());
    const bare = await startBareFastify();
    cleanup.unshift(() => bare.close());

    const newToken = async (permissions: Permission[] = ["read"]) => (await createToken(bench.ctx, { projectId: project.id, permissions, mode: "test" })).token;
    const offsets = [0, Math.floor(rows / 2), rows - PAGE_LIMIT];
    const scenarios: Scenario[] = [
      // The ratio compares these two: measured back to back, so a change in the machine's other
      // load between them is as small as it can be.
      { name: "bare Fastify JSON route", key: "bare", url: bare.url, authenticated: false },
      { name: "GET /v1/balance", key: "balance", url: `${appUrl}/v1/balance`, authenticated: true },
      ...(diagnose
        ? [
            { name: "(diagnostic) app hooks only", key: "app_hooks_only", url: `${appUrl}/_bench/hooks-only`, authenticated: false, diagnostic: true },
            { name: "(diagnostic) app hooks + guard", key: "app_guard_only", url: `${appUrl}/_bench/guard-only`, authenticated: true, diagnostic: true },
          ]
        : []),
      ...offsets.map((offset) => ({
        name: `GET /v1/transactions?limit=${PAGE_LIMIT}${offset ? `&offset=${offset}` : ""}`,
        key: `transactions_offset_${offset}`,
        url: `${appUrl}/v1/transactions?limit=${PAGE_LIMIT}${offset ? `&offset=${offset}` : ""}`,
        authenticated: true,
        page: { offset },
      })),
    ];

    const filterScenarios = (await filterCases(bench, project.id, rows)).map(
      (c): Scenario => ({ name: c.name, key: c.key, url: `${appUrl}/v1/transactions?${c.query}`, authenticated: true, filter: { rows: c.rows } }),
    );
    const allScenarios = values["filters-only"] ? filterScenarios : [...scenarios, ...filterScenarios];

    const measured: Measured[] = [];
    for (const scenario of allScenarios) {
      // A fresh token per measurement keeps each token's rate-limit log inside one window.
      const headersFor = async (): Promise<Record<string, string>> => (scenario.authenticated ? { authorization: `Bearer ${await newToken()}` } : {});
      await checkAnswer(scenario, await headersFor(), rows);
      log(`${scenario.name}: ${samples} sequential requests…`);
      const single = await probeLatency({ url: scenario.url, headers: await headersFor(), samples, warmup: Math.min(50, samples), maxSeconds: probeSeconds });
      if (single.samples < samples) log(`${scenario.name}: time budget reached after ${single.samples} sequential requests`);
      if (scenario.filter) {
        measured.push({ scenario, load: NO_LOAD, single, loadAverage1m: machine().loadAverage1m });
        continue;
      }
      log(`${scenario.name}: ${durationSeconds} s under load…`);
      const load = await runLoad({ url: scenario.url, headers: await headersFor(), connections, durationSeconds, warmupSeconds });
      measured.push({ scenario, load, single, loadAverage1m: machine().loadAverage1m });
    }

    const bareRate = measured.find((m) => m.scenario.key === "bare")?.load.reqPerSec ?? Number.NaN;
    console.log("");
    printTable(
      ["endpoint", "req/s", "×bare", "p50 ms", "p99 ms", "errors", "non-2xx", "1-conn n", "1-conn p50 ms", "1-conn p99 ms", "load avg"],
      measured.filter((m) => !m.scenario.filter).map(({ scenario, load, single, loadAverage1m }): Cell[] => [
        scenario.name,
        Math.round(load.reqPerSec),
        `${(load.reqPerSec / bareRate).toFixed(2)}×`,
        load.p50Ms,
        load.p99Ms,
        load.errors + load.timeouts,
        load.non2xx + single.non2xx,
        single.samples,
        single.p50Ms,
        single.p99Ms,
        loadAverage1m.toFixed(2),
      ]),
    );
    console.log("(p50/p99 under load come from autocannon in whole milliseconds; 1-conn figures are timed per request in microseconds)");
    console.log("");
    printTable(
      ["filtered or cursor page (GET /v1/transactions?…)", "rows", "1-conn n", "1-conn p50 ms", "1-conn p99 ms", "non-2xx", "load avg"],
      measured.filter((m) => m.scenario.filter).map(({ scenario, single, loadAverage1m }): Cell[] => [scenario.name, scenario.filter!.rows, single.samples, single.p50Ms, single.p99Ms, single.non2xx, loadAverage1m.toFixed(2)]),
    );

    const balance = measured.find((m) => m.scenario.key === "balance");
    const targets = [
      ...(balance
        ? [
            {
              target: `GET /v1/balance ≥ ${TARGET_BALANCE_RATIO_MIN} × bare Fastify req/s`,
              measured: `${Math.round(balance.load.reqPerSec)} / ${Math.round(bareRate)} = ${(balance.load.reqPerSec / bareRate).toFixed(2)}×`,
              ok: balance.load.reqPerSec / bareRate >= TARGET_BALANCE_RATIO_MIN && clean(balance),
            },
          ]
        : []),
      ...measured
        .filter((m) => m.scenario.page)
        .map((m) => ({
          target: `page at offset ${m.scenario.page!.offset.toLocaleString("en-US")}: p99 ≤ ${TARGET_PAGE_P99_MS_MAX} ms (1 connection)`,
          measured: `p99 ${formatNumber(m.single.p99Ms)} ms, p50 ${formatNumber(m.single.p50Ms)} ms (n=${m.single.samples}); under load p99 ${m.load.p99Ms} ms`,
          ok: m.single.p99Ms <= TARGET_PAGE_P99_MS_MAX && clean(m),
        })),
      ...measured
        .filter((m) => m.scenario.filter)
        .map((m) => ({
          target: `${m.scenario.name}: p99 ≤ ${TARGET_PAGE_P99_MS_MAX} ms (1 connection)`,
          measured: `p99 ${formatNumber(m.single.p99Ms)} ms, p50 ${formatNumber(m.single.p50Ms)} ms (n=${m.single.samples})`,
          ok: m.single.p99Ms <= TARGET_PAGE_P99_MS_MAX && m.single.non2xx === 0,
        })),
    ];
    console.log("");
    printTable(["target", "measured", "verdict"], targets.map((t) => [t.target, t.measured, verdict(t.ok)]));

    let diagnostics;
    if (diagnose) {
      log("in-process breakdown (no HTTP, one call at a time)…");
      const filtered = filterScenarios.map((f) => ({ name: f.name, query: new URL(f.url).search.slice(1) }));
      diagnostics = await readDiagnostics(bench, { projectId: project.id, token: await newToken(), offsets, pageLimit: PAGE_LIMIT, samples: 500, deepSamples: 50, maxSeconds: 20, filtered });
      console.log("");
      printTable(["operation", "samples", "p50 ms", "p99 ms", "mean ms"], diagnostics.rows.map((r) => [r.operation, r.samples, r.p50Ms, r.p99Ms, r.meanMs]));
      for (const [name, lines] of Object.entries(diagnostics.plans)) {
        console.log(`\nplan, ${name}:`);
        for (const line of lines) console.log(`  ${line}`);
      }
    }

    const file = writeResult(`read-${dialect}`, {
      suite: "read",
      at: new Date().toISOString(),
      machine: { ...host, loadAverage1mAtEnd: machine().loadAverage1m },
      settings,
      seed: { rows, ms: Math.round(seed.ms), rowsPerSec: Math.round(seed.rowsPerSec), balance: seed.balance },
      results: measured.map(({ scenario, load, single, loadAverage1m }) => ({ key: scenario.key, name: scenario.name, diagnostic: scenario.diagnostic ?? false, load, single, ratioToBare: load.reqPerSec / bareRate, loadAverage1m })),
      targets: targets.map((t) => ({ target: t.target, measured: t.measured, verdict: verdict(t.ok) })),
      diagnostics,
    });
    console.log(`\nload average at end ${machine().loadAverage1m}; result written to ${file}`);
  } finally {
    process.removeListener("SIGINT", onSignal);
    await closeAll(cleanup);
  }
}

/** A figure measured on refused or failed requests is not a figure. */
function clean(m: Measured): boolean {
  return m.load.errors + m.load.timeouts + m.load.non2xx + m.single.non2xx === 0;
}

/** One request before measuring: the endpoint answers 200 with what the benchmark claims to read. */
async function checkAnswer(scenario: Scenario, headers: Record<string, string>, rows: number): Promise<void> {
  const res = await fetch(scenario.url, { headers });
  const body = (await res.json()) as { transactions?: unknown[]; total_count?: number };
  if (res.status !== 200) throw new Error(`${scenario.name} answered ${res.status}: ${JSON.stringify(body)}`);
  if (scenario.page && (body.transactions?.length !== PAGE_LIMIT || body.total_count !== rows)) {
    throw new Error(`${scenario.name}: expected ${PAGE_LIMIT} rows of ${rows}, got ${body.transactions?.length} of ${body.total_count}`);
  }
  // A filtered page holds rows unless the filter matches none (then it must hold none); the count is shown.
  if (scenario.filter) {
    const got = body.transactions?.length ?? -1;
    if (scenario.filter.rows === 0 ? got !== 0 : got < 1 || got > PAGE_LIMIT) throw new Error(`${scenario.name}: expected ${scenario.filter.rows === 0 ? "no" : `1 to ${PAGE_LIMIT}`} rows, got ${got}`);
    scenario.filter.rows = got;
  }
}

/** No load run for this scenario (filtered pages are measured one request at a time). */
const NO_LOAD: LoadResult = { reqPerSec: 0, p50Ms: 0, p99Ms: 0, errors: 0, timeouts: 0, non2xx: 0 } as LoadResult;

/**
 * The filtered and cursor pages: each filter alone, dense and sparse (a type absent from the history
 * reads every (type, status) range and finds nothing), combinations, time ranges near and far back,
 * cursors at the middle of the history, and the deepest filtered offset. Times and ids are read from
 * the seeded history, so every case pages through real rows.
 */
async function filterCases(bench: Awaited<ReturnType<typeof createBenchContext>>, projectId: string, rows: number) {
  const at = async (pos: number) =>
    (await dbOf(bench.ctx.ledger).selectFrom("transactions").select(["id", "created_at"]).where("project_id", "=", projectId).where("pos", "=", pos).executeTakeFirstOrThrow());
  const middle = await at(Math.floor(rows / 2));
  const early = await at(Math.floor(rows / 10));
  const monthAfterMiddle = new Date(Date.parse(middle.created_at) + 30 * 86_400_000).toISOString();
  const L = PAGE_LIMIT;
  // 1,000 deep, or as deep as a small history's failed rows still fill a page (a smoke run seeds 20,000).
  const failed = Number((await dbOf(bench.ctx.ledger).selectFrom("transactions").select((eb) => eb.fn.countAll<number>().as("n")).where("project_id", "=", projectId).where("status", "=", "failed").executeTakeFirstOrThrow()).n);
  const deepOffset = Math.max(0, Math.min(1000, failed - L));
  const cases: { name: string; key: string; query: string; rows: number }[] = [
    { name: "type=x402_payment", key: "filter_type_dense", query: "type=x402_payment", rows: L },
    { name: "type=fiat_withdrawal (none in the history)", key: "filter_type_empty", query: "type=fiat_withdrawal", rows: 0 },
    { name: "status=completed", key: "filter_status_dense", query: "status=completed", rows: L },
    { name: "status=failed", key: "filter_status_sparse", query: "status=failed", rows: L },
    { name: "type=payment&status=reversed", key: "filter_type_status_rare", query: "type=payment&status=reversed", rows: L },
    { name: "type=usdc_transfer,payment&status=completed,failed", key: "filter_multi", query: "type=usdc_transfer,payment&status=completed,failed", rows: L },
    { name: "created_after=<middle>", key: "filter_after", query: `created_after=${middle.created_at}`, rows: L },
    { name: "created_after=<middle>&created_before=<middle + 30 days>", key: "filter_time_range", query: `created_after=${middle.created_at}&created_before=${monthAfterMiddle}`, rows: L },
    { name: "created_before=<10 % into the history>", key: "filter_before_early", query: `created_before=${early.created_at}`, rows: L },
    { name: "type=x402_payment,platform_fee&status=completed&created_after=…&created_before=…", key: "filter_all", query: `type=x402_payment,platform_fee&status=completed&created_after=${middle.created_at}&created_before=${monthAfterMiddle}`, rows: L },
    { name: "starting_after=<middle id>", key: "cursor_plain", query: `starting_after=${middle.id}`, rows: L },
    { name: "status=completed&starting_after=<middle id>", key: "cursor_filtered", query: `status=completed&starting_after=${middle.id}`, rows: L },
    { name: `status=failed&offset=${deepOffset} (deepest filtered offset)`, key: "filter_offset_max", query: `status=failed&offset=${deepOffset}`, rows: L },
  ];
  return cases.map((c) => ({ ...c, query: `limit=${L}&${c.query.replaceAll("+", "%2B")}` }));
}

async function closeAll(steps: (() => Promise<void>)[]): Promise<void> {
  for (const step of steps.splice(0)) await step().catch((err) => console.error("cleanup failed:", err));
}

function parseFlags(args: string[]) {
  try {
    return parseArgs({ args, options: FLAGS });
  } catch (err) {
    throw new UsageError(`${(err as Error).message}\n\n${HELP}`);
  }
}

function positiveInt(name: string, text: string, min: number): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n < min) throw new UsageError(`--${name} must be an integer ≥ ${min} (got "${text}")`);
  return n;
}

