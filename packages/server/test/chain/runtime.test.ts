// The sandbox chain runtime: by default the chain is kept in the data directory between runs; with
// `chainState: "memory"` (tests and benchmarks, whose data directory is thrown away) anvil keeps no file.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, test } from "vitest";
import { startChainRuntime } from "../../src/chain/runtime.ts";
import { loadConfig } from "../../src/config.ts";

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
function sandboxConfig() {
  const dir = mkdtempSync(join(tmpdir(), "aw-runtime-"));
  dirs.push(dir);
  return loadConfig({ AGENTWALLET_DATA_DIR: dir });
}

test("default: the sandbox chain is written to chain-state.json in the data directory", async () => {
  const config = sandboxConfig();
  const chain = await startChainRuntime(config);
  await chain.sandbox!.stop();
  expect(chain.sandbox!.statePath).toBe(join(config.dataDir, "chain-state.json"));
  expect(existsSync(join(config.dataDir, "chain-state.json"))).toBe(true);
});

test("behavior: chainState memory keeps no file", async () => {
  const config = sandboxConfig();
  const chain = await startChainRuntime(config, { chainState: "memory" });
  expect(await chain.client.blockNumber()).toBeGreaterThan(0);
  await chain.sandbox!.stop();
  expect(chain.sandbox!.statePath).toBeUndefined();
  expect(existsSync(join(config.dataDir, "chain-state.json"))).toBe(false);
});
