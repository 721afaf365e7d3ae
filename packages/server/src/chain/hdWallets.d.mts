/** See hdWallets.mjs. */
import type { HDAccount } from "viem/accounts";

/** BIP-39's seed of a phrase without passphrase, by the platform's PBKDF2. */
export function bip39Seed(mnemonic: string): Uint8Array;
/** The wallet at `index` of the mnemonic's m/44'/60'/0'/0 (seed and node derived once, wallets cached, bounded). */
export function hdWallets(mnemonic: string): (index: number) => HDAccount;
