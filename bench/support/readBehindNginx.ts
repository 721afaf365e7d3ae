/**
 * `npm run bench -- read --db postgres --behind nginx`: GET /v1/balance and the first transaction page of the seeded
 * project, measured as the default run measures them (under load, then one request at a time) on one
 * `agentwallet serve` process reached directly, then through nginx with TLS in front of two (behindNginx.ts).
 * Prints each figure beside its proxy/direct ratio and writes the result file.
 */
import { createToken } from "../../packages/server/src/services/tokens.ts";
import { type Cell, type LoadResult, type Machine, type ProbeResult, getJson, log, machine, printTable, probeLatency, runLoad, writeResult } from "../lib.ts";
import type { BenchContext } from "./benchContext.ts";
import { startBehindNginx } from "./behindNginx.ts";
import type { SeedResult } from "./seedTransactions.ts";

export type ReadBehindOptions = {
  projectId: string;
  rows: number;
  pageLimit: number;
  connections: number;
  durationSeconds: number;
  warmupSeconds: number;
  samples: number;
  probeSeconds: number;
  logLevel: string;
  rateLimitPerMinute: number;
  /** The bench's settings and what it seeded, for the result file. */
  settings: Record<string, unknown>;
  host: Machine;
  seed: SeedResult;
  /** Hands `stop` to the bench's cleanup on SIGINT. */
  onStop(stop: () => Promise<void>): void;
};

type Target = "direct" | "nginx";
type Measured = { target: Target; key: string; name: string; load: LoadResult; single: ProbeResult; loadAverage1m: number };

export async function readBehindNginx(bench: BenchContext, o: ReadBehindOptions): Promise<void> {
  const scenarios = [
    { key: "balance", name: "GET /v1/balance", path: "/v1/balance", page: false },
    { key: "transactions_offset_0", name: `GET /v1/transactions?limit=${o.pageLimit}`, path: `/v1/transactions?limit=${o.pageLimit}`, page: true },
  ];
  const shape = await startBehindNginx({ databaseUrl: bench.postgresUrl!, env: { RATE_LIMIT_PER_MINUTE: String(o.rateLimitPerMinute), LOG_LEVEL: o.logLevel } });
  o.onStop(shape.stop);
  try {
    const measured: Measured[] = [];
    const measure = async (target: Target, base: string, ca: Buffer | undefined) => {
      for (const s of scenarios) {
        const url = `${base}${s.path}`;
        // A fresh token per measurement keeps each token's rate-limit log inside one window.
        const headers = async () => ({ authorization: `Bearer ${(await createToken(bench.ctx, { projectId: o.projectId, permissions: ["read"], mode: "live" })).token}` });
        await checkAnswer(s.name, url, await headers(), ca, s.page ? { pageLimit: o.pageLimit, rows: o.rows } : undefined);
        log(`${s.name}, ${target}: ${o.samples} sequential requests…`);
        const single = await probeLatency({ url, headers: await headers(), samples: o.samples, warmup: Math.min(50, o.samples), maxSeconds: o.probeSeconds, ca });
        if (single.samples < o.samples) log(`${s.name}, ${target}: time budget reached after ${single.samples} sequential requests`);
        log(`${s.name}, ${target}: ${o.durationSeconds} s under load…`);
        const load = await runLoad({ url, headers: await headers(), connections: o.connections, durationSeconds: o.durationSeconds, warmupSeconds: o.warmupSeconds });
        measured.push({ target, key: s.key, name: s.name, load, single, loadAverage1m: machine().loadAverage1m });
      }
    };
    await measure("direct", shape.directUrl, undefined);
    await measure("nginx", await shape.addProxy(), shape.ca);

    const pairs = scenarios.map((s) => ({ scenario: s, direct: measured.find((m) => m.key === s.key && m.target === "direct")!, nginx: measured.find((m) => m.key === s.key && m.target === "nginx")! }));
    const figures: { name: string; of: (m: Measured) => number }[] = [
      { name: "req/s", of: (m) => Math.round(m.load.reqPerSec) },
      { name: "p50 ms under load", of: (m) => m.load.p50Ms },
      { name: "p99 ms under load", of: (m) => m.load.p99Ms },
      { name: "1-conn p50 ms", of: (m) => m.single.p50Ms },
      { name: "1-conn p99 ms", of: (m) => m.single.p99Ms },
    ];
    const ratios = pairs.flatMap(({ scenario, direct, nginx }) => figures.map((f) => ({ key: scenario.key, figure: f.name, measure: `${scenario.name}: ${f.name}`, direct: f.of(direct), nginx: f.of(nginx), ratio: f.of(nginx) / f.of(direct) })));
    console.log("");
    printTable(["measure", "direct, 1 process", "nginx + TLS, 2 processes", "proxy/direct"], ratios.map((r): Cell[] => [r.measure, r.direct, r.nginx, Number.isFinite(r.ratio) ? `${r.ratio.toFixed(2)}×` : "-"]));
    console.log("(p50/p99 under load come from autocannon in whole milliseconds; 1-conn figures are timed per request in microseconds)");
    console.log("");
    printTable(
      ["run", "errors", "non-2xx", "1-conn n", "load avg"],
      measured.map((m): Cell[] => [`${m.name}, ${m.target}`, m.load.errors + m.load.timeouts, m.load.non2xx + m.single.non2xx, m.single.samples, m.loadAverage1m.toFixed(2)]),
    );
    const unclean = measured.filter((m) => m.load.errors + m.load.timeouts + m.load.non2xx + m.single.non2xx > 0);
    if (unclean.length) console.log(`\nWARNING: failed or refused requests in ${unclean.map((m) => `${m.name}, ${m.target}`).join("; ")}: those figures are not figures`);

    const file = writeResult("read-postgres-behind-nginx", {
      suite: "read",
      behind: "nginx",
      at: new Date().toISOString(),
      machine: { ...o.host, loadAverage1mAtEnd: machine().loadAverage1m },
      settings: o.settings,
      seed: { rows: o.rows, ms: Math.round(o.seed.ms), rowsPerSec: Math.round(o.seed.rowsPerSec), balance: o.seed.balance },
      results: measured,
      ratios: ratios.map((r) => ({ ...r, ratio: Number.isFinite(r.ratio) ? r.ratio : null })),
    });
    console.log(`\nload average at end ${machine().loadAverage1m}; result written to ${file}`);
  } finally {
    await shape.stop();
  }
}

/** One request before measuring: the endpoint answers 200, a page with the rows the seed made. */
async function checkAnswer(name: string, url: string, headers: Record<string, string>, ca: Buffer | undefined, page: { pageLimit: number; rows: number } | undefined): Promise<void> {
  const { status, body } = await getJson(url, headers, ca);
  if (status !== 200) throw new Error(`${name} at ${url} answered ${status}: ${JSON.stringify(body)}`);
  const got = body as { transactions?: unknown[]; total_count?: number };
  if (page && (got.transactions?.length !== page.pageLimit || got.total_count !== page.rows)) {
    throw new Error(`${name} at ${url}: expected ${page.pageLimit} rows of ${page.rows}, got ${got.transactions?.length} of ${got.total_count}`);
  }
}
