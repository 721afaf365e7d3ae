// The ledger's PostgreSQL reads leave nothing for the young generation to keep: a loop of 50-row reads through
// its Kysely, in a process of its own under `--trace-gc-nvp`, keeps almost nothing alive at each scavenge. Through
// pg's promise API (what Kysely calls unless ledger/db.ts wraps it) a third of it survived, and each scavenge took
// ~10 ms, the p99 of the list pages.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { describe, expect, test } from "vitest";
import { postgresUrl } from "./support/db.ts";

const run = promisify(execFile);
const loop = fileURLToPath(new URL("./support/pgReadLoop.ts", import.meta.url));
const READS = 6_000;

/** The share of the young generation that survived each scavenge of the loop's second half (V8's `new_space_survive_rate_`), in %. */
async function survivalRates(mode: "ledger" | "pg-promise"): Promise<number[]> {
  const { stdout } = await run(process.execPath, ["--trace-gc-nvp", "--import", "tsx", loop, mode, postgresUrl(), String(READS)], { timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  expect(stdout).toContain(`rows ${READS * 50}`);
  const rates = stdout
    .split("\n")
    .filter((line) => / gc=s /.test(line))
    .map((line) => Number(/ new_space_survive_rate_=([\d.]+)%/.exec(line)?.[1]));
  // The first scavenges see the loader's compiled modules and the connection's own objects.
  return rates.slice(Math.floor(rates.length / 2));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

describe("PostgreSQL results and the collector", () => {
  test("reads through the ledger's Kysely leave nothing behind at a scavenge; pg's promise API did", async () => {
    const ledger = await survivalRates("ledger");
    const promise = await survivalRates("pg-promise");
    expect(ledger.length, "scavenges seen").toBeGreaterThanOrEqual(3);
    expect(promise.length, "scavenges seen").toBeGreaterThanOrEqual(3);
    expect(median(ledger), `ledger: ${ledger.join(", ")}`).toBeLessThan(5);
    // If pg's promise API stops keeping its results, the wrapper in ledger/db.ts (`answeredByCallback`) can go.
    expect(median(promise), `pg's promise API: ${promise.join(", ")}`).toBeGreaterThan(15);
  }, 240_000);
});
