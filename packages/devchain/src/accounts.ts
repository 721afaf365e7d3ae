// Named roles for anvil's prefunded accounts, so every test and the sandbox agree on who is who.
import { pbkdf2Sync } from "node:crypto";
import { bytesToHex, type Address, type Hex } from "viem";
import { HDKey, privateKeyToAddress } from "viem/accounts";

/** The well-known mnemonic anvil (and Hardhat) prefund from. Public: never hold real value with it. */
export const ANVIL_MNEMONIC = "test test test test test test test test test test test junk";

export type DevAccount = { address: Address; privateKey: Hex };

/** Role → HD index under m/44'/60'/0'/0. Index 0 deploys TestUSDC, which fixes its address. */
export const DEV_ACCOUNT_INDEXES = {
  deployer: 0,
  relayer: 1,
  treasury: 2,
  facilitator: 3,
  merchant: 4,
  payer: 5,
  other: 6,
  /** The sandbox's ACH off-ramp: receives USDC for payouts and refunds failed or returned ones. */
  offramp: 7,
} as const;

export type DevAccountRole = keyof typeof DEV_ACCOUNT_INDEXES;
export type DevAccounts = Record<DevAccountRole, DevAccount>;

let cached: DevAccounts | undefined;

/**
 * The named accounts, derived once per process. The BIP-39 seed is computed once, by the platform's PBKDF2, and
 * m/44'/60'/0'/0 once; each account is then one step. viem's mnemonicToAccount computed the seed in JavaScript for
 * each of the eight (400 ms of a sandbox's start on a slow machine; the server's custody does the same: hdWallets.mjs).
 */
export function devAccounts(): DevAccounts {
  if (cached) return cached;
  const seed = pbkdf2Sync(Buffer.from(ANVIL_MNEMONIC.normalize("NFKD"), "utf8"), "mnemonic", 2048, 64, "sha512");
  const external = HDKey.fromMasterSeed(new Uint8Array(seed)).derive("m/44'/60'/0'/0");
  cached = Object.freeze(
    Object.fromEntries(
      Object.entries(DEV_ACCOUNT_INDEXES).map(([role, index]) => [role, Object.freeze(deriveAccount(external, index))]),
    ) as DevAccounts,
  );
  return cached;
}

function deriveAccount(external: HDKey, addressIndex: number): DevAccount {
  const privateKey = external.deriveChild(addressIndex).privateKey;
  if (!privateKey) throw new Error(`HD key ${addressIndex} has no private key`);
  const hex = bytesToHex(privateKey);
  return { address: privateKeyToAddress(hex), privateKey: hex };
}
