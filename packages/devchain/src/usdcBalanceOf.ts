// Reads a TestUSDC balance in base units (micros: 1 USDC = 1_000_000).
import { createPublicClient, http, type Address } from "viem";
import { testUsdcAbi } from "./artifacts.ts";

const RPC_TIMEOUT_MS = 10_000;

export async function usdcBalanceOf(rpcUrl: string, usdc: Address, address: Address): Promise<bigint> {
  const client = createPublicClient({ transport: http(rpcUrl, { timeout: RPC_TIMEOUT_MS, retryCount: 0 }) });
  return client.readContract({ address: usdc, abi: testUsdcAbi, functionName: "balanceOf", args: [address] });
}
