/**
 * For CLI commands: the chain runtime of a running sandbox (read from its sandbox.json), or of the
 * live configuration. The CLI never starts a chain of its own.
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import type { Config } from "../config.ts";
import { createChainClient } from "./chainClient.ts";
import { type ChainRuntime, startChainRuntime } from "./runtime.ts";

export type SandboxFile = { base_url: string; rpc_url: string; chain_id: number; usdc_address: Address; relayer_address: Address; treasury_address: Address; minter_private_key: Hex; pid: number; [k: string]: unknown };

export function readSandboxFile(dataDir: string): SandboxFile | undefined {
  const file = join(dataDir, "sandbox.json");
  if (!existsSync(file)) return undefined;
  const info = JSON.parse(readFileSync(file, "utf8")) as SandboxFile;
  try {
    process.kill(info.pid, 0);
  } catch {
    return undefined;
  }
  return info;
}

export async function connectChain(config: Config): Promise<ChainRuntime> {
  if (config.mode === "live") return startChainRuntime(config);
  const s = readSandboxFile(config.dataDir);
  if (!s) throw new Error(`No running sandbox for data dir ${config.dataDir}. Start it with \`npm start\`.`);
  // The sandbox's roles are devchain's well-known dev accounts (public test keys), as the server uses them.
  const { devAccounts } = await import("@agentwallet/devchain");
  const accounts = devAccounts();
  return {
    client: createChainClient({ rpcUrl: s.rpc_url, chainId: s.chain_id, usdcAddress: s.usdc_address, timeoutMs: config.chain.rpcTimeoutMs, retries: config.chain.rpcRetries, pollingIntervalMs: 100 }),
    relayerKey: accounts.relayer.privateKey,
    relayerAddress: accounts.relayer.address,
    treasuryAddress: s.treasury_address,
    sandbox: { rpcUrl: s.rpc_url, stop: async () => {}, mint: async () => { throw new Error("mint through `agentwallet fund`"); }, accounts: {}, statePath: undefined, offrampKey: accounts.offramp.privateKey },
  };
}
