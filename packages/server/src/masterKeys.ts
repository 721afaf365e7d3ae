/**
 * The master key source and the keys derived from it: a process's wallets (deps.ts), the recipient hash, the webhook
 * secrets' and the bank accounts' keys. A module of its own so the CLI's commands reach these keys without the
 * rails, the chain client and the rest of what deps.ts assembles for a server.
 */
import { createHmac } from "node:crypto";
import { join } from "node:path";
import { loadMasterMnemonic } from "./chain/custody.ts";
import type { Config } from "./config.ts";

/**
 * The key bank accounts in spending controls are hashed with, derived from the master key source
 * (so no further secret is needed and the database holds none): the same on every process.
 */
export function loadRecipientHashKey(config: Config): Uint8Array {
  return createHmac("sha256", masterMnemonic(config)).update("agentwallet recipient hash v1").digest();
}

/**
 * The AES-256 key webhook endpoints' signing secrets are encrypted with, derived from the master key
 * source like the recipient hash key: the database holds no secret it could open by itself.
 */
export function loadWebhookSecretKey(config: Config): Uint8Array {
  return createHmac("sha256", masterMnemonic(config)).update("agentwallet webhook secret key v1").digest();
}

/**
 * The AES-256 key the account numbers of bank payments awaiting their payout are sealed with, derived from
 * the master key source like the others (domain/bankAccount.ts).
 */
export function loadBankAccountKey(config: Config): Uint8Array {
  return createHmac("sha256", masterMnemonic(config)).update("agentwallet bank account key v1").digest();
}

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
