// A ready-to-use local chain: anvil, TestUSDC at a fixed address, Multicall3 at its canonical address,
// and the named dev accounts. Used by the sandbox (with a state file) and by tests (without).
import { createTestClient, getContractAddress, http, type Address, type Hex } from "viem";
import { devAccounts, type DevAccounts } from "./accounts.ts";
import { startAnvil, type StartAnvilOptions } from "./anvil.ts";
import { MULTICALL3_ADDRESS, multicall3Artifact, testUsdcAbi, testUsdcArtifact } from "./artifacts.ts";
import { type CircleUsdc, deployCircleUsdc } from "./circleUsdc.ts";
import { RECEIPT_TIMEOUT_MS, devChainDefinition, devPublicClient, devWalletClient } from "./chain.ts";

export type StartDevChainOptions = StartAnvilOptions & {
  /**
   * Place the test USDC's code at this address (e.g. Base's USDC, 0x833589fC…2913) instead of the
   * deployer's first contract, so a live-mode configuration that uses the real address runs unchanged.
   * TestUSDC keeps no constructor state (its EIP-712 domain reads `address(this)`), so its code alone works.
   */
  usdcAddress?: Address;
  /**
   * Which USDC: our test token (default), or Circle's own FiatTokenV2_2 behind its proxy (circleUsdc.ts;
   * at Base's USDC address unless `usdcAddress` says otherwise), whose blacklist and pause the chain's
   * `circle` handle drives.
   */
  usdc?: "test" | "circle";
};

export type DevChain = {
  rpcUrl: string;
  chainId: number;
  usdcAddress: Address;
  multicall3Address: Address;
  accounts: DevAccounts;
  /** Mints TestUSDC base units to `to` and waits for the receipt; resolves to the transaction hash. */
  mint(to: Address, amountMicros: bigint): Promise<Hex>;
  /** Circle's USDC as its owner, pauser and blacklister (with `usdc: "circle"` only). */
  circle?: CircleUsdc;
  /** Stops anvil (writing the state file, if any). Idempotent. */
  stop(): Promise<void>;
};

export class DevChainError extends Error {
  override name = "DevChainError";
}

export async function startDevChain(options: StartDevChainOptions = {}): Promise<DevChain> {
  const chainId = options.chainId ?? 8453;
  const { usdcAddress: _usdcAt, usdc: _usdc, ...anvilOptions } = options;
  const anvil = await startAnvil({ ...anvilOptions, chainId });
  try {
    const circle = options.usdc === "circle" ? await deployCircleUsdc({ rpcUrl: anvil.rpcUrl, chainId, address: options.usdcAddress }) : undefined;
    const dev = await connectDevChain({ rpcUrl: anvil.rpcUrl, chainId, usdcAddress: circle?.address ?? options.usdcAddress });
    return { ...dev, ...(circle ? { circle } : {}), stop: anvil.stop };
  } catch (error) {
    await anvil.stop();
    throw error;
  }
}

/**
 * A dev chain over an anvil that runs already (started by someone else, or behind a proxy): places
 * Multicall3 and TestUSDC as startDevChain does (keeping a TestUSDC that is there; with `usdcAddress`,
 * keeping any contract already there, such as Circle's USDC placed by whoever started the chain). `stop` does nothing:
 * the chain belongs to whoever started it.
 */
export async function connectDevChain(options: { rpcUrl: string; chainId?: number; usdcAddress?: Address }): Promise<DevChain> {
  const chainId = options.chainId ?? 8453;
  const rpcUrl = options.rpcUrl;
  const chain = devChainDefinition(chainId, rpcUrl);
  const publicClient = devPublicClient(chain);
  const accounts = devAccounts();
  const deployer = devWalletClient(chain, accounts.deployer.privateKey);

  // Multicall3 keeps no state, so (re)placing its code is always safe, also on a restored chain.
  await createTestClient({ mode: "anvil", chain, transport: http(rpcUrl) }).setCode({
    address: MULTICALL3_ADDRESS,
    bytecode: multicall3Artifact.deployedBytecode,
  });
  const usdcAddress = options.usdcAddress ?? (await ensureTestUsdc(publicClient, deployer));
  const placed = options.usdcAddress ? await publicClient.getCode({ address: options.usdcAddress }) : undefined;
  if (options.usdcAddress && (placed === undefined || placed === "0x")) {
    await createTestClient({ mode: "anvil", chain, transport: http(options.rpcUrl) }).setCode({ address: options.usdcAddress, bytecode: testUsdcArtifact.deployedBytecode });
  }

  const mint = async (to: Address, amountMicros: bigint): Promise<Hex> => {
    const hash = await deployer.writeContract({
      address: usdcAddress,
      abi: testUsdcAbi,
      functionName: "mint",
      args: [to, amountMicros],
    });
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
    if (receipt.status !== "success") throw new DevChainError(`mint of ${amountMicros} micros to ${to} reverted (tx ${hash})`);
    return hash;
  };

  return {
    rpcUrl,
    chainId,
    usdcAddress,
    multicall3Address: MULTICALL3_ADDRESS,
    accounts,
    mint,
    stop: async () => {},
  };
}

type PublicClient = ReturnType<typeof devPublicClient>;
type WalletClient = ReturnType<typeof devWalletClient>;

/**
 * TestUSDC is the deployer's first contract, so its address is the same on every fresh chain. A chain
 * restored from a state file already has it there: reuse it, keeping the balances.
 */
async function ensureTestUsdc(publicClient: PublicClient, deployer: WalletClient): Promise<Address> {
  const from = deployer.account.address;
  const usdcAddress = getContractAddress({ from, nonce: 0n });

  const code = await publicClient.getCode({ address: usdcAddress });
  if (code !== undefined && code !== "0x") {
    if (code.toLowerCase() !== testUsdcArtifact.deployedBytecode.toLowerCase()) {
      throw new DevChainError(
        `the chain has a different contract at the TestUSDC address ${usdcAddress} (the state file predates the ` +
          `current contracts/TestUSDC.sol). Delete the state file to start a fresh chain.`,
      );
    }
    return usdcAddress;
  }

  const nonce = await publicClient.getTransactionCount({ address: from });
  if (nonce !== 0) {
    throw new DevChainError(
      `the deployer ${from} has already sent ${nonce} transaction(s) but there is no TestUSDC at ${usdcAddress}; ` +
        `the address is only deterministic for its first transaction. Delete the state file to start a fresh chain.`,
    );
  }
  const hash = await deployer.deployContract({ abi: testUsdcAbi, bytecode: testUsdcArtifact.bytecode });
  const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
  if (receipt.status !== "success" || receipt.contractAddress?.toLowerCase() !== usdcAddress.toLowerCase()) {
    throw new DevChainError(
      `TestUSDC deployment ${hash} ended with status ${receipt.status} at ${receipt.contractAddress ?? "no address"}, expected ${usdcAddress}`,
    );
  }
  return usdcAddress;
}
