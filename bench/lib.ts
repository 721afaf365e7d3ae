/**
 * Helpers shared by the benchmark suites: a load run (autocannon), a sequential latency probe, the
 * bare Fastify route that sets the ceiling, a table printer, machine facts and the JSON result file.
 *
 * autocannon runs in a worker thread (`workers: 1`) so the load generator never shares an event
 * loop with the server it measures; both still share the machine's cores, which every suite prints.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import os from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import Fastify from "fastify";

/** A wrong flag or setting: printed without a stack trace. */
export class UsageError extends Error {
  override name = "UsageError";
}

export type LoadOptions = {
  url: string;
  headers?: Record<string, string>;
  connections: number;
  durationSeconds: number;
  /** A short unmeasured run first: JIT, connection pools and page caches warm up. */
  warmupSeconds: number;
};

export type LoadResult = {
  reqPerSec: number;
  /** autocannon records latency in whole milliseconds: 0 means under 1 ms. */
  p50Ms: number;
  p99Ms: number;
  requests: number;
  errors: number;
  timeouts: number;
  non2xx: number;
};

/** Saturates one URL for a fixed time; latency is per request under that load. */
export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const base = { url: options.url, headers: options.headers ?? {}, connections: options.connections, workers: 1, timeout: 30 };
  if (options.warmupSeconds > 0) await autocannon({ ...base, duration: options.warmupSeconds });
  const r = await autocannon({ ...base, duration: options.durationSeconds });
  return {
    reqPerSec: r.requests.average,
    p50Ms: r.latency.p50,
    p99Ms: r.latency.p99,
    requests: r.requests.total,
    errors: r.errors,
    timeouts: r.timeouts,
    non2xx: r.non2xx,
  };
}

export type ProbeResult = { samples: number; p50Ms: number; p99Ms: number; maxMs: number; meanMs: number; non2xx: number };

/**
 * One request at a time over one keep-alive connection, timed on the client with a monotonic
 * clock (microsecond resolution): the latency a single caller sees when the server is not busy.
 * An https URL is reached trusting `ca` (a proxy's generated certificate).
 */
export async function probeLatency(options: { url: string; headers?: Record<string, string>; samples: number; warmup: number; maxSeconds: number; ca?: Buffer }): Promise<ProbeResult> {
  const agent = keepAliveAgent(options.url, options.ca);
  try {
    let non2xx = 0;
    const timesMs: number[] = [];
    const deadline = performance.now() + options.maxSeconds * 1000;
    // Bounded by count and by time: a slow endpoint yields fewer samples, never an endless run.
    for (let i = 0; i < options.warmup + options.samples && performance.now() < deadline; i++) {
      const { status, ms } = await timedGet(options.url, options.headers ?? {}, agent);
      if (i < options.warmup) continue;
      if (status < 200 || status > 299) non2xx++;
      timesMs.push(ms);
    }
    timesMs.sort((a, b) => a - b);
    return {
      samples: timesMs.length,
      p50Ms: percentile(timesMs, 0.5),
      p99Ms: percentile(timesMs, 0.99),
      maxMs: timesMs.at(-1) ?? 0,
      meanMs: timesMs.reduce((s, t) => s + t, 0) / Math.max(1, timesMs.length),
      non2xx,
    };
  } finally {
    agent.destroy();
  }
}

function keepAliveAgent(url: string, ca: Buffer | undefined): http.Agent {
  return url.startsWith("https:") ? new https.Agent({ keepAlive: true, maxSockets: 1, ca }) : new http.Agent({ keepAlive: true, maxSockets: 1 });
}

function timedGet(url: string, headers: Record<string, string>, agent: http.Agent): Promise<{ status: number; ms: number }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    const req = (url.startsWith("https:") ? https : http).get(url, { agent, headers, timeout: 30_000 }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode ?? 0, ms: Number(process.hrtime.bigint() - started) / 1e6 }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url} took over 30 s`)));
    req.on("error", reject);
  });
}

/** One GET and its answer as JSON (an https URL trusting `ca`): to check an endpoint before measuring it. */
export function getJson(url: string, headers: Record<string, string>, ca?: Buffer): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const req = (url.startsWith("https:") ? https : http).get(url, { headers, ca, timeout: 30_000 }, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => (text += chunk));
      res.on("end", () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) });
        } catch (err) {
          reject(new Error(`GET ${url} answered ${res.statusCode} with no JSON: ${text.slice(0, 200)}`, { cause: err }));
        }
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`GET ${url} took over 30 s`)));
    req.on("error", reject);
  });
}

/** Nearest-rank percentile of an ascending array (q in 0..1). */
export function percentile(sortedAsc: number[], q: number): number {
  if (sortedAsc.length === 0) return 0;
  return sortedAsc[Math.min(sortedAsc.length - 1, Math.max(0, Math.ceil(q * sortedAsc.length) - 1))]!;
}

/** Times an async operation up to `samples` times in a row (after `warmup` untimed runs), within `maxSeconds`. */
export async function timeAsync(samples: number, warmup: number, maxSeconds: number, fn: () => Promise<unknown> | unknown): Promise<{ samples: number; p50Ms: number; p99Ms: number; meanMs: number }> {
  const timesMs: number[] = [];
  const deadline = performance.now() + maxSeconds * 1000;
  for (let i = 0; i < warmup + samples && performance.now() < deadline; i++) {
    const started = process.hrtime.bigint();
    await fn();
    if (i >= warmup) timesMs.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  timesMs.sort((a, b) => a - b);
  return { samples: timesMs.length, p50Ms: percentile(timesMs, 0.5), p99Ms: percentile(timesMs, 0.99), meanMs: timesMs.reduce((s, t) => s + t, 0) / Math.max(1, timesMs.length) };
}

export const BALANCE_SHAPED_BODY = { project_id: "prj_0000000000000000000000000", currency: "usdc", available: 123_456_789, pending: 0, total_funded: 500_000_000, total_spent: 376_543_211, wallet_address: null };

/**
 * The ceiling: a Fastify app with one JSON route and nothing else (no logger, hooks, auth or
 * database). It answers a static object shaped like a balance so serialisation costs the same.
 */
export async function startBareFastify(): Promise<{ url: string; close(): Promise<void> }> {
  const app = Fastify({ logger: false });
  app.get("/", async () => BALANCE_SHAPED_BODY);
  const address = await app.listen({ host: "127.0.0.1", port: 0 });
  return { url: `${address}/`, close: () => app.close() };
}

export type Cell = string | number;

/** Prints an aligned table: text left, numbers right. */
export function printTable(headers: string[], rows: Cell[][]): void {
  const text = rows.map((r) => r.map((c) => (typeof c === "number" ? formatNumber(c) : c)));
  const widths = headers.map((h, i) => Math.max(h.length, ...text.map((r) => (r[i] ?? "").length)));
  const numeric = headers.map((_, i) => rows.every((r) => typeof r[i] === "number" || /^[\d.,]+×?$/.test(String(r[i]))));
  const line = (cells: string[]) => cells.map((c, i) => (numeric[i] ? c.padStart(widths[i]!) : c.padEnd(widths[i]!))).join("  ").trimEnd();
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of text) console.log(line(r));
}

export function formatNumber(n: number): string {
  if (Number.isInteger(n)) return n.toLocaleString("en-US");
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString("en-US");
  if (Math.abs(n) >= 10) return n.toFixed(1);
  // Three decimals below 10: a p99 of 5.003 ms must not print as the 5.00 it fails against.
  return n.toFixed(3);
}

export function verdict(ok: boolean): "PASS" | "MISS" {
  return ok ? "PASS" : "MISS";
}

export type Machine = { cpus: number; cpuModel: string; memoryGiB: number; node: string; os: string; loadAverage1m: number };

/** The facts needed to read a figure later; load average shows how busy the shared machine was. */
export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? "unknown",
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    os: `${os.type()} ${os.release()}`,
    loadAverage1m: Math.round(os.loadavg()[0]! * 100) / 100,
  };
}

/** Writes `bench/results/<name>-<timestamp>.json` (gitignored) and returns its path. */
export function writeResult(name: string, data: unknown): string {
  const dir = fileURLToPath(new URL("./results/", import.meta.url));
  mkdirSync(dir, { recursive: true });
  const path = `${dir}${name}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(path, `${JSON.stringify(data, null, 2)}\n`);
  return path;
}

export function log(message: string): void {
  console.log(`[${new Date().toISOString().slice(11, 19)}] ${message}`);
}

/**
 * The database a suite's sandbox server uses: SQLite in its own temp dir (nothing to do), or a fresh
 * schema on PostgreSQL ($TEST_DATABASE_URL or the local server), dropped by `drop()`.
 */
export async function benchDatabase(db: "sqlite" | "postgres"): Promise<{ databaseUrl: string | undefined; drop(): Promise<void> }> {
  if (db === "sqlite") return { databaseUrl: undefined, drop: async () => {} };
  const { createPgSchema } = await import("../packages/server/test/support/db.ts");
  process.env.TEST_DATABASE_URL ??= "postgres://postgres@127.0.0.1:5432/test";
  const schema = await createPgSchema();
  return { databaseUrl: schema.url, drop: schema.drop };
}
