// Named roles for anvil's prefunded accounts, so every test and the sandbox agree on who is who.
import { bytesToHex, type Address, type Hex } from "viem";
import { mnemonicToAccount } from "viem/accounts";

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

/** The named accounts. Derivation takes ~100 ms, so it is done once per process. */
export function devAccounts(): DevAccounts {
  cached ??= Object.freeze(
    Object.fromEntries(
      Object.entries(DEV_ACCOUNT_INDEXES).map(([role, index]) => [role, Object.freeze(deriveAccount(index))]),
    ) as DevAccounts,
  );
  return cached;
}

function deriveAccount(addressIndex: number): DevAccount {
  const account = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex });
  const privateKey = account.getHdKey().privateKey;
  if (!privateKey) throw new Error(`HD key ${addressIndex} has no private key`);
  return { address: account.address, privateKey: bytesToHex(privateKey) };
}
