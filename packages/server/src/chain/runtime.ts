/**
 * The chain side of a running service: which chain, which USDC, the relayer and treasury, and (in
 * sandbox mode) the local dev chain itself. Sandbox mode loads the devchain package dynamically, so
 * it is never on the production path.
 */
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Config } from "../config.ts";
import { type ChainClient, createChainClient } from "./chainClient.ts";

export type ChainRuntime = {
  client: ChainClient;
  relayerKey: Hex;
  relayerAddress: Address;
  treasuryAddress: Address;
  /** Sandbox only: the dev chain, its accounts and a mint function. */
  sandbox?: {
    rpcUrl: string;
    stop(): Promise<void>;
    mint(to: Address, amountMicros: bigint): Promise<Hex>;
    accounts: Record<string, { address: Address; privateKey: Hex }>;
    /** The sandbox off-ramp's account (it receives USDC for payouts and refunds failures). */
    offrampKey: Hex;
    /** Where the chain is kept between runs; undefined when it lives in memory only. */
    statePath: string | undefined;
  };
};

export type ChainRuntimeOptions = {
  rpcPollingMs?: number;
  /**
   * Sandbox: `file` (default) keeps the chain in the data directory between runs; `memory` keeps no
   * file, for a data directory thrown away afterwards (tests, benchmarks): anvil then never spends a
   * core rewriting a state file that grows with every transaction.
   */
  chainState?: "file" | "memory";
};

export async function startChainRuntime(config: Config, opts: ChainRuntimeOptions = {}): Promise<ChainRuntime> {
  if (config.mode === "live") {
    const relayerKey = config.custody.relayerPrivateKey as Hex;
    return {
      client: createChainClient({ rpcUrl: config.chain.rpcUrl!, chainId: config.chain.chainId, usdcAddress: config.chain.usdcAddress as Address, timeoutMs: config.chain.rpcTimeoutMs, retries: config.chain.rpcRetries, pollingIntervalMs: opts.rpcPollingMs }),
      relayerKey,
      relayerAddress: privateKeyToAccount(relayerKey).address,
      treasuryAddress: config.custody.treasuryAddress as Address,
    };
  }
  const { startDevChain, connectDevChain } = await import("@agentwallet/devchain");
  // A chain kept apart from the sandbox keeps its own state; the sandbox writes none for it.
  const statePath = opts.chainState === "memory" || config.chain.sandboxRpcUrl ? undefined : join(config.dataDir, "chain-state.json");
  // A chain running apart may carry its own USDC (Circle's, at USDC_ADDRESS): it is kept, not replaced.
  // Instant blocks for transactions plus one empty block a second, so deposits gain confirmations.
  const dev = config.chain.sandboxRpcUrl ? await connectDevChain({ rpcUrl: config.chain.sandboxRpcUrl, usdcAddress: config.chain.usdcAddress as Address | undefined }) : await startDevChain({ statePath, blockTime: 1, mixedMining: true });
  return {
    client: createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: config.chain.rpcTimeoutMs, retries: config.chain.rpcRetries, pollingIntervalMs: opts.rpcPollingMs ?? 100 }),
    relayerKey: dev.accounts.relayer.privateKey,
    relayerAddress: dev.accounts.relayer.address,
    treasuryAddress: dev.accounts.treasury.address,
    sandbox: { rpcUrl: dev.rpcUrl, stop: dev.stop, mint: dev.mint, accounts: dev.accounts as never, statePath, offrampKey: dev.accounts.offramp.privateKey },
  };
}
