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

test("behavior: SANDBOX_CHAIN_RPC_URL uses a chain that runs apart, writes no state for it and never stops it", async () => {
  const { startDevChain } = await import("@agentwallet/devchain");
  const dev = await startDevChain();
  try {
    const dir = mkdtempSync(join(tmpdir(), "aw-runtime-"));
    dirs.push(dir);
    const config = loadConfig({ AGENTWALLET_DATA_DIR: dir, SANDBOX_CHAIN_RPC_URL: dev.rpcUrl });
    const chain = await startChainRuntime(config);
    expect(chain.sandbox!.rpcUrl).toBe(dev.rpcUrl);
    expect(chain.client.usdcAddress).toBe(dev.usdcAddress);
    expect(chain.sandbox!.statePath).toBeUndefined();
    await chain.sandbox!.mint(chain.relayerAddress, 5n);
    await chain.sandbox!.stop();
    // Still answering: the sandbox stopped only what it started.
    expect(await chain.client.usdcBalance(chain.relayerAddress)).toBe(5n);
  } finally {
    await dev.stop();
  }
});

test("error: live mode refuses SANDBOX_CHAIN_RPC_URL", () => {
  expect(() =>
    loadConfig({ BASE_RPC_URL: "http://127.0.0.1:1", SANDBOX_CHAIN_RPC_URL: "http://127.0.0.1:2", AGENTWALLET_MASTER_MNEMONIC: "x", RELAYER_PRIVATE_KEY: "0x1", TREASURY_ADDRESS: "0x1" }),
  ).toThrow(/SANDBOX_CHAIN_RPC_URL is for the sandbox only/);
});
