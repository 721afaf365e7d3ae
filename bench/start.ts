/**
 * `npm run bench -- start`: `npm start` on a fresh data directory, as the README says, timed from spawn
 * to the banner and to the first `GET /v1/balance` answered with the printed token. Target: serving
 * within 3 s. Each run starts its own anvil and stops everything it started.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { parseArgs } from "node:util";
import { freePort } from "../packages/server/test/support/net.ts";
import { UsageError, log, machine, percentile, printTable, verdict, writeResult } from "./lib.ts";

const TARGET_SERVING_MS_MAX = 3_000;
const root = resolve(import.meta.dirname, "..");

async function once(): Promise<{ bannerMs: number; servingMs: number }> {
  const dir = mkdtempSync(join(tmpdir(), "aw-start-"));
  const port = await freePort();
  const started = performance.now();
  // Its own process group, so the whole tree (npm → node → anvil) is stopped together.
  const child: ChildProcess = spawn("npm", ["start"], { cwd: root, env: { ...process.env, AGENTWALLET_DATA_DIR: dir, PORT: String(port), LOG_LEVEL: "warn", DATABASE_URL: "", BASE_RPC_URL: "" }, stdio: ["ignore", "pipe", "pipe"], detached: true });
  try {
    let out = "";
    child.stderr!.on("data", (d) => (out += d));
    const banner = await new Promise<string>((ok, fail) => {
      const timer = setTimeout(() => fail(new Error(`no banner within 30 s:\n${out}`)), 30_000);
      child.stdout!.on("data", (d) => {
        out += d;
        if (/Try:\n/.test(out)) {
          clearTimeout(timer);
          ok(out);
        }
      });
      child.once("exit", (code) => fail(new Error(`npm start exited with ${code}:\n${out}`)));
    });
    const bannerMs = performance.now() - started;
    const token = /Demo token\s+(\S+)/.exec(banner)![1]!;
    const res = await fetch(`http://127.0.0.1:${port}/v1/balance`, { headers: { authorization: `Bearer ${token}` } });
    if (res.status !== 200) throw new Error(`balance answered ${res.status}`);
    return { bannerMs, servingMs: performance.now() - started };
  } finally {
    const exited = new Promise((r) => child.once("exit", r));
    try {
      process.kill(-child.pid!, "SIGTERM");
    } catch {
      /* already gone */
    }
    const kill = setTimeout(() => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        /* already gone */
      }
    }, 5_000);
    await exited;
    clearTimeout(kill);
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { runs: { type: "string", default: "5" } } });
  const runs = Number(values.runs);
  if (!(Number.isInteger(runs) && runs > 0 && runs <= 50)) throw new UsageError("--runs must be an integer from 1 to 50");
  log("one unmeasured start first (module caches warm, as after `npm install`)…");
  await once();
  const results: { bannerMs: number; servingMs: number }[] = [];
  for (let i = 0; i < runs; i++) {
    results.push(await once());
    log(`run ${i + 1}: banner ${Math.round(results.at(-1)!.bannerMs)} ms, serving ${Math.round(results.at(-1)!.servingMs)} ms`);
  }
  const serving = results.map((r) => r.servingMs).sort((a, b) => a - b);
  const banner = results.map((r) => r.bannerMs).sort((a, b) => a - b);
  console.log(`\nmachine: ${JSON.stringify(machine())}`);
  printTable(["measure", "median ms", "max ms"], [
    ["npm start → banner", Math.round(percentile(banner, 0.5)), Math.round(banner.at(-1)!)],
    ["npm start → balance answered with the printed token", Math.round(percentile(serving, 0.5)), Math.round(serving.at(-1)!)],
  ]);
  console.log(`\nserving within ${TARGET_SERVING_MS_MAX} ms (median): ${verdict(percentile(serving, 0.5) <= TARGET_SERVING_MS_MAX)}`);
  console.log(`result: ${writeResult("start", { machine: machine(), runs: results })}`);
}
