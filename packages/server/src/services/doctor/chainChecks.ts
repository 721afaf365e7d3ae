/**
 * `doctor`'s checks of the chain a live deployment is configured for: the RPC answers with the configured
 * chain id and a recent head (the host's clock against the chain's), USDC_ADDRESS answers as USDC, Multicall3
 * is there, the relayer has ETH for a while yet, and the treasury is set and is not a project's wallet.
 */
import { type Address, type Hex, domainSeparator, formatEther, getAddress, isAddress, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { Config } from "../../config.ts";
import { type ChainClient, MULTICALL3_ADDRESS, createChainClient } from "../../chain/chainClient.ts";
import { USDC_EIP712 } from "../../rails/eip3009.ts";
import { relayerRunway } from "../relayerRunway.ts";
import { type Check, fail, ok, warn } from "./check.ts";

/** A head older than this says the node is behind (Base makes a block every 2 s). */
export const HEAD_AGE_WARN_S = 60;
export const HEAD_AGE_FAIL_S = 600;
/** The host's clock ahead of the chain's newest block by more than this is skew, not latency. */
export const CLOCK_SKEW_MAX_S = 30;
/** Less runway than this at the recent rate is a warning: fund the relayer. */
export const RUNWAY_WARN_S = 7 * 86_400;
const USDC_DECIMALS = 6;

const usdcReads = parseAbi([
  "function name() view returns (string)",
  "function version() view returns (string)",
  "function decimals() view returns (uint8)",
  "function DOMAIN_SEPARATOR() view returns (bytes32)",
]);

export type ChainCheckInput = {
  now: Date;
  /** From the database; undefined when it could not be read. */
  paymentsLastDay: number | undefined;
  treasuryIsProjectWallet: boolean | undefined;
};

export async function chainChecks(config: Config, input: ChainCheckInput): Promise<Check[]> {
  const c = config.chain;
  const client = createChainClient({ rpcUrl: c.rpcUrl!, chainId: c.chainId, usdcAddress: (c.usdcAddress ?? "0x") as Address, timeoutMs: c.rpcTimeoutMs, retries: c.rpcRetries });
  let chainId: number;
  try {
    chainId = await client.client.getChainId();
  } catch (err) {
    return [fail("rpc", `BASE_RPC_URL does not answer: ${shortError(err)}`, "check BASE_RPC_URL (the provider's URL and key) and that this host may reach it"), treasuryCheck(config, input)];
  }
  if (chainId !== c.chainId) {
    return [fail("rpc", `BASE_RPC_URL serves chain ${chainId}, this deployment is configured for chain ${c.chainId} (Base)`, `point BASE_RPC_URL at a Base mainnet node (chain ${c.chainId})`), treasuryCheck(config, input)];
  }
  return [
    ok("rpc", `BASE_RPC_URL answers, chain ${chainId}`),
    await headCheck(client, input.now),
    await usdcCheck(client, c.chainId),
    await multicallCheck(client),
    await relayerCheck(config, client, input.paymentsLastDay),
    treasuryCheck(config, input),
  ];
}

async function headCheck(client: ChainClient, now: Date): Promise<Check> {
  const block = await client.client.getBlock({ blockTag: "latest" });
  const ageS = Math.round(now.getTime() / 1_000 - Number(block.timestamp));
  const at = `head block ${block.number} at ${new Date(Number(block.timestamp) * 1_000).toISOString()}`;
  if (ageS < -CLOCK_SKEW_MAX_S) return warn("head", `${at}, ${-ageS} s ahead of this host's clock`, "this host's clock is behind: run NTP (systemd-timesyncd or chrony); expiries of authorizations are reckoned by it");
  if (ageS > HEAD_AGE_FAIL_S) return fail("head", `${at}, ${ageS} s old`, "the node is not following the chain (or this host's clock is ahead): use a synced RPC provider and run NTP");
  if (ageS > HEAD_AGE_WARN_S) return warn("head", `${at}, ${ageS} s old`, "the node lags the chain, or this host's clock is ahead: check the provider and NTP");
  return ok("head", `${at} (${Math.max(0, ageS)} s old)`);
}

async function usdcCheck(client: ChainClient, chainId: number): Promise<Check> {
  const address = client.usdcAddress;
  const fix = `set USDC_ADDRESS to Circle's USDC on this chain (on Base: 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913), or unset it for that default`;
  if (!isAddress(address)) return fail("usdc", `USDC_ADDRESS "${address}" is not an address`, fix);
  const code = await client.client.getCode({ address });
  if (!code || code === "0x") return fail("usdc", `no contract at USDC_ADDRESS ${address}`, fix);
  let got: { name: string; version: string; decimals: number; separator: Hex };
  try {
    const read = <F extends "name" | "version" | "decimals" | "DOMAIN_SEPARATOR">(functionName: F) => client.client.readContract({ address, abi: usdcReads, functionName });
    const [name, version, decimals, separator] = await Promise.all([read("name"), read("version"), read("decimals"), read("DOMAIN_SEPARATOR")]);
    got = { name, version, decimals, separator };
  } catch (err) {
    return fail("usdc", `the contract at USDC_ADDRESS ${address} does not answer as USDC (name, version, decimals, DOMAIN_SEPARATOR): ${shortError(err)}`, fix);
  }
  const expected = domainSeparator({ domain: { ...USDC_EIP712, chainId, verifyingContract: getAddress(address) } });
  const wrong = [
    got.name !== USDC_EIP712.name && `name "${got.name}" (USDC's is "${USDC_EIP712.name}")`,
    got.version !== USDC_EIP712.version && `version "${got.version}" (expected "${USDC_EIP712.version}")`,
    got.decimals !== USDC_DECIMALS && `decimals ${got.decimals} (expected ${USDC_DECIMALS})`,
    got.separator.toLowerCase() !== expected.toLowerCase() && "an EIP-712 domain separator that is not USDC's on this chain",
  ].filter(Boolean);
  if (wrong.length) return fail("usdc", `the contract at USDC_ADDRESS ${address} is not USDC: ${wrong.join("; ")}`, fix);
  return ok("usdc", `USDC at ${address}: "${got.name}" version ${got.version}, ${got.decimals} decimals, EIP-712 domain as signed`);
}

async function multicallCheck(client: ChainClient): Promise<Check> {
  const code = await client.client.getCode({ address: MULTICALL3_ADDRESS });
  if (!code || code === "0x") return fail("multicall3", `no Multicall3 at ${MULTICALL3_ADDRESS}`, "the relayer batches payments through Multicall3 at its canonical address; use a chain that has it (Base does)");
  return ok("multicall3", `Multicall3 at ${MULTICALL3_ADDRESS}`);
}

async function relayerCheck(config: Config, client: ChainClient, paymentsLastDay: number | undefined): Promise<Check> {
  if (!config.custody.relayerPrivateKey) return fail("relayer", "RELAYER_PRIVATE_KEY is not set", "create the relayer account (a fresh key used for nothing else), set RELAYER_PRIVATE_KEY and send it ETH on Base");
  let relayer: Address;
  try {
    relayer = privateKeyToAccount(config.custody.relayerPrivateKey as Hex).address;
  } catch {
    return fail("relayer", "RELAYER_PRIVATE_KEY is not a private key (0x and 64 hex digits)", "set RELAYER_PRIVATE_KEY to the relayer account's key");
  }
  const [balanceWei, gasPriceWei] = await Promise.all([client.client.getBalance({ address: relayer }), client.client.getGasPrice()]);
  const r = relayerRunway({ balanceWei, gasPriceWei, paymentsLastDay: paymentsLastDay ?? 0 });
  const fund = `send ETH on Base to the relayer ${relayer} (docs/deploy.md, "Fund the relayer")`;
  const held = `relayer ${relayer} holds ${formatEther(balanceWei)} ETH`;
  if (r.paymentsLeft === 0n) return fail("relayer", `${held}: not enough gas for one payment`, fund);
  if (r.runwaySeconds === undefined) return ok("relayer", `${held} (about ${r.paymentsLeft} payments; none in the last day, so no runway estimate)`);
  const days = (r.runwaySeconds / 86_400).toFixed(1);
  if (r.runwaySeconds < RUNWAY_WARN_S) return warn("relayer", `${held}: about ${days} days at the last day's ${paymentsLastDay} payment(s)`, fund);
  return ok("relayer", `${held}: about ${days} days at the last day's ${paymentsLastDay} payment(s)`);
}

function treasuryCheck(config: Config, input: ChainCheckInput): Check {
  const t = config.custody.treasuryAddress;
  if (!t || !isAddress(t)) return fail("treasury", t ? `TREASURY_ADDRESS "${t}" is not an address` : "TREASURY_ADDRESS is not set", "set TREASURY_ADDRESS to an address you control outside Agent Wallet (a multisig or an exchange deposit address): platform fees go there");
  if (input.treasuryIsProjectWallet) return fail("treasury", `TREASURY_ADDRESS ${t} is a project's wallet`, "fees paid into a project's wallet would count as that project's deposits; use an address outside Agent Wallet");
  return ok("treasury", `fees go to ${getAddress(t)}`);
}

/** The first line of an error, without viem's request dump. */
function shortError(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e.shortMessage ?? e.message ?? String(err)).split("\n")[0]!.slice(0, 200);
}
