// The sandbox's demo x402 merchant keeps its port across restarts (x402-demo.json), so a URL copied from the
// banner keeps working. A second `npm start` on the same directory while the first runs finds that port
// taken, starts its merchant elsewhere, then fails on the API's port: before the fix it had already written
// its stand-in port, and the running sandbox's merchant port was lost for every later start.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { createLogger } from "../../src/deps.ts";
import { type RunningSandbox, startSandbox } from "../../src/sandbox/startSandbox.ts";

const dir = mkdtempSync(join(tmpdir(), "aw-demo-port-"));
let first: RunningSandbox | undefined;
afterAll(async () => {
  await first?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function sandboxConfig(port: number) {
  return loadConfig({ AGENTWALLET_DATA_DIR: dir, SETTLEMENT: "inline", LOG_LEVEL: "silent" }, { port, host: "127.0.0.1" });
}

const keptPort = () => (JSON.parse(readFileSync(join(dir, "x402-demo.json"), "utf8")) as { merchant_port: number }).merchant_port;

test("behavior: a second start that fails on the API's port leaves the demo merchant's kept port as it was", async () => {
  first = await startSandbox(sandboxConfig(0), createLogger("silent"), { chainState: "memory", x402Demo: true, defaultMetrics: false });
  const merchantPort = Number(new URL(first.x402Demo!.merchantUrl).port);
  expect(keptPort()).toBe(merchantPort);

  const apiPort = Number(new URL(first.baseUrl).port);
  await expect(startSandbox(sandboxConfig(apiPort), createLogger("silent"), { chainState: "memory", x402Demo: true, defaultMetrics: false })).rejects.toThrow(/EADDRINUSE/);
  expect(keptPort()).toBe(merchantPort);
}, 120_000);
