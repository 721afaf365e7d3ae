/**
 * The master mnemonic's file for a live deployment: written once by `agentwallet init` (24 words, BIP-39,
 * mode 0600 in a directory of mode 0700), and taken as it is when it exists. Never overwritten: a different
 * mnemonic derives different wallets, so replacing the file would lose every project's funds.
 */
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { english, generateMnemonic } from "viem/accounts";
import { loadMasterMnemonic } from "./custody.ts";

/** Creates the file with a fresh mnemonic unless it exists; an existing one must read as a mnemonic. `created`: whether it was written now. */
export function ensureMnemonicFile(path: string): { created: boolean } {
  if (existsSync(path)) {
    loadMasterMnemonic({ file: path });
    return { created: false };
  }
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  // `wx`: a file that appeared meanwhile is never replaced.
  writeFileSync(path, `${generateMnemonic(english, 256)}\n`, { mode: 0o600, flag: "wx" });
  chmodSync(path, 0o600);
  return { created: true };
}
