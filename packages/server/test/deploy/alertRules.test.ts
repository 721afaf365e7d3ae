/**
 * The shipped alert rules (deploy/prometheus/alerts.yml) pass Prometheus's own checks and unit tests
 * (`promtool test rules alerts.test.yml`), and every metric they name is one the server exposes. promtool
 * is required: CI installs it (Debian's `prometheus` package, .ci/run); without it this test fails.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";
import { createMetrics } from "../../src/http/metrics.ts";

const run = promisify(execFile);
const dir = resolve(import.meta.dirname, "../../../../deploy/prometheus");

async function promtool(args: string[]): Promise<string> {
  try {
    const { stdout, stderr } = await run("promtool", args, { cwd: dir, timeout: 60_000 });
    return stdout + stderr;
  } catch (err) {
    const e = err as NodeJS.ErrnoException & { stdout?: string; stderr?: string };
    if (e.code === "ENOENT") throw new Error("promtool is not installed: apt-get install -y prometheus (Debian's package ships it); .ci/run installs it");
    throw new Error(`promtool ${args.join(" ")} failed:\n${e.stdout ?? ""}${e.stderr ?? ""}`);
  }
}

test("default: the rules load and their unit tests pass", async () => {
  expect(await promtool(["check", "rules", "alerts.yml"])).toMatch(/SUCCESS: \d+ rules found/);
  expect(await promtool(["test", "rules", "alerts.test.yml"])).toMatch(/SUCCESS/);
}, 120_000);

test("behavior: every metric the rules name is one the server exposes", async () => {
  const named = new Set(readFileSync(join(dir, "alerts.yml"), "utf8").match(/\bagentwallet_[a-z_]+/g));
  const exposed = new Set((await createMetrics({ health: () => undefined }).registry.getMetricsAsJSON()).map((m) => m.name));
  expect(named.size).toBeGreaterThan(5);
  expect([...named].filter((n) => !exposed.has(n))).toEqual([]);
});
