/** A real anvil chain with the test USDC for server tests, plus block-mining helpers. */
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import { type Address, type Hex, createTestClient, http } from "viem";
import { createChainClient, type ChainClient } from "../../src/chain/chainClient.ts";

export type TestChain = { dev: DevChain; client: ChainClient; mine(blocks?: number): Promise<void>; snapshot(): Promise<Hex>; revert(id: Hex): Promise<void>; stop(): Promise<void> };

export async function startTestChain(): Promise<TestChain> {
  const dev = await startDevChain();
  const client = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress as Address, timeoutMs: 5_000, retries: 1, pollingIntervalMs: 50 });
  const test = createTestClient({ mode: "anvil", transport: http(dev.rpcUrl) });
  return {
    dev,
    client,
    mine: (blocks = 1) => test.mine({ blocks }),
    snapshot: () => test.snapshot(),
    revert: (id) => test.revert({ id }),
    stop: () => dev.stop(),
  };
}
