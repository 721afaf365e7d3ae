/**
 * Custody port: each project's wallet is derived from one master mnemonic at BIP-44 path
 * m/44'/60'/0'/0/{walletIndex}. The mnemonic never leaves this module: callers get addresses and
 * signatures. A KMS or HSM signer can replace this implementation behind the same interface.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { type Address, type Hex, type TransactionSerializable, type TypedDataDefinition, getAddress, serializeTransaction } from "viem";
import { validateMnemonic } from "@scure/bip39";
import { english, generateMnemonic, privateKeyToAccount, sign } from "viem/accounts";
import { signTypedDataOf } from "./eip3009Digest.mjs";
import { hdWallets } from "./hdWallets.mjs";
import { keccak256Of } from "./keccak.ts";
import type { SigningPool } from "./signingPool.ts";

export interface Custody {
  addressOf(walletIndex: number): Address;
  /**
   * A narrow signer for one wallet, shaped like x402's and viem's local accounts. Signatures are made
   * in the signing threads when there are any; `onCallerThread` makes them on the caller's thread,
   * for a single signature that a waiting request needs at once (the hop costs more than the work).
   */
  signerFor(walletIndex: number, opts?: { onCallerThread?: boolean }): { address: Address; signTypedData(def: TypedDataDefinition): Promise<Hex> };
  /**
   * The relayer's key signs its transactions here too, so all signing shares one place. Always on the
   * caller's thread: one signature per relayer transaction (a whole batch), which its store waits for;
   * the hop to a signing thread would cost more than the work.
   */
  transactionSigner(privateKey: Hex): { address: Address; signTransaction(tx: TransactionSerializable): Promise<Hex> };
  close(): Promise<void>;
}

/** With a pool, signatures are made in worker threads; without, on the caller's thread (tests, CLI). */
export function createHdCustody(mnemonic: string, opts: { pool?: SigningPool } = {}): Custody {
  const pool = opts.pool;
  const account = hdWallets(mnemonic);
  return {
    addressOf: (index) => getAddress(account(index).address),
    signerFor(index, opts) {
      const a = account(index);
      const threaded = pool && !opts?.onCallerThread ? pool : undefined;
      return { address: a.address, signTypedData: (def) => (threaded ? threaded.signTypedData(index, def) : signTypedDataOf(a, def)) };
    },
    transactionSigner(privateKey) {
      const a = privateKeyToAccount(privateKey);
      // As viem's signTransaction, with the hash of the unsigned transaction taken by keccak.ts (the same digest, faster).
      const signTransaction = async (tx: TransactionSerializable): Promise<Hex> => {
        const signature = await sign({ hash: await keccak256Of(serializeTransaction(tx)), privateKey, to: "object" });
        return serializeTransaction(tx, signature);
      };
      return { address: a.address, signTransaction };
    },
    close: async () => pool?.close(),
  };
}

/**
 * Where the master mnemonic comes from: the environment or a file in live mode; in sandbox mode a
 * fresh one is generated into the data directory (mode 0600) on first start and reused after.
 */
export function loadMasterMnemonic(opts: { mnemonic?: string; file?: string; sandboxFile?: string }): string {
  if (opts.mnemonic) return validate(opts.mnemonic.trim(), "AGENTWALLET_MASTER_MNEMONIC");
  if (opts.file) return validate(readFileSync(opts.file, "utf8").trim(), opts.file);
  if (!opts.sandboxFile) throw new Error("no master key source configured: set AGENTWALLET_MASTER_MNEMONIC or AGENTWALLET_MASTER_MNEMONIC_FILE (live mode keeps none in the data directory)");
  if (existsSync(opts.sandboxFile)) return validate(readFileSync(opts.sandboxFile, "utf8").trim(), opts.sandboxFile);
  mkdirSync(dirname(opts.sandboxFile), { recursive: true });
  const fresh = generateMnemonic(english, 256);
  writeFileSync(opts.sandboxFile, `${fresh}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(opts.sandboxFile, 0o600);
  return fresh;
}

/**
 * Whether the words are a BIP-39 phrase: each in BIP-39's English list, and the checksum right. A phrase copied with
 * a typo fails it (a word of the list in the wrong place: 15 in 16 for 12 words, 255 in 256 for 24), and would derive
 * other wallets than the backup's.
 * Not checked by `loadMasterMnemonic`: a deployment whose wallets were derived from other words keeps them (its start
 * is checked against the ledger, services/masterKeyCheck.ts).
 */
export function isBip39Phrase(mnemonic: string): boolean {
  return validateMnemonic(mnemonic, english);
}

/** What a start or `doctor` says of words that are not a BIP-39 phrase (never the words). */
export const NOT_BIP39_PHRASE = "is not a BIP-39 phrase: a word is not in BIP-39's English list, or the checksum does not match";

function validate(m: string, source: string): string {
  const words = m.split(/\s+/);
  if (![12, 15, 18, 21, 24].includes(words.length)) throw new Error(`master mnemonic from ${source} must have 12-24 words`);
  // As BIP-39 derives from them: the words separated by single spaces.
  if (m.normalize("NFKD").split(" ").length !== words.length) throw new Error(`master mnemonic from ${source} must separate its words by single spaces`);
  return m;
}
