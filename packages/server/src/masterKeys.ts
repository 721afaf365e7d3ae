/**
 * The master key source and the keys derived from it: a process's wallets (deps.ts), the recipient hash, the webhook
 * secrets' and the bank accounts' keys. A module of its own so the CLI's commands reach these keys without the
 * rails, the chain client and the rest of what deps.ts assembles for a server.
 */
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { loadMasterMnemonic } from "./chain/custody.ts";
import type { Config } from "./config.ts";

/** A key for one purpose, derived from the master key source: no further secret is needed, and the database holds none. */
const derivedKey = (config: Config, purpose: string): Uint8Array => createHmac("sha256", masterMnemonic(config)).update(`agentwallet ${purpose}`).digest();

/** The key bank accounts in spending controls are hashed with: the same on every process. */
export const loadRecipientHashKey = (config: Config) => derivedKey(config, "recipient hash v1");

/** The AES-256 key webhook endpoints' signing secrets are encrypted with: the database holds no secret it could open by itself. */
export const loadWebhookSecretKey = (config: Config) => derivedKey(config, "webhook secret key v1");

/** The AES-256 key the account numbers of bank payments awaiting their payout are sealed with (domain/bankAccount.ts). */
export const loadBankAccountKey = (config: Config) => derivedKey(config, "bank account key v1");

export function masterMnemonic(config: Config): string {
  return loadMasterMnemonic({
    mnemonic: config.custody.mnemonic,
    file: config.custody.mnemonicFile,
    sandboxFile: config.mode === "sandbox" ? join(config.dataDir, "master-mnemonic") : undefined,
  });
}

/** Where `masterMnemonic` reads the words from, named for people: the setting, or the file's path. */
export function masterKeySource(config: Config): string {
  return config.custody.mnemonic ? "AGENTWALLET_MASTER_MNEMONIC" : `AGENTWALLET_MASTER_MNEMONIC_FILE ${config.custody.mnemonicFile}`;
}
