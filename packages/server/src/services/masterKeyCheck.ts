/**
 * The master key against the ledger: it must derive the deposit address recorded for the first project that has
 * one. Any valid words read as a mnemonic, so the wrong backup restored passes every other check and signs for no
 * existing wallet; one derivation suffices (other words derive the same address with odds of 2⁻¹⁶⁰).
 * `agentwallet doctor` reports a mismatch (doctor/settingsChecks.ts); a live process refuses to start with one
 * (deps.ts `openDeps`). Only addresses are ever named, never the words.
 */
import { type Custody, NOT_BIP39_PHRASE } from "../chain/custody.ts";
import type { ProjectStore } from "../ledger/ports.ts";
import type { RecordedWallet } from "../ledger/projects.ts";

export type { RecordedWallet };

/** What the key derives where a project's wallet is recorded, when the two differ. */
export type MasterKeyMismatch = { derived: string; recorded: RecordedWallet };

/** What to do about a mismatch, for doctor's fix column and the start-up's refusal alike. */
export const MASTER_KEY_MISMATCH_FIX =
  "restore the words this deployment was set up with from their backup (docs/deploy.md, \"Keys\"); with these no payment from an existing wallet can be signed";

/** The mismatch, or undefined when the key derives the recorded wallet (or no wallet is recorded yet). */
export function masterKeyMismatch(custody: Pick<Custody, "addressOf">, recorded: RecordedWallet | undefined): MasterKeyMismatch | undefined {
  if (!recorded) return undefined;
  const derived = custody.addressOf(recorded.walletIndex);
  return derived.toLowerCase() === recorded.address.toLowerCase() ? undefined : { derived, recorded };
}

/** `source`: where the words were read from (a setting's name, a file), never the words. */
export function describeMasterKeyMismatch(m: MasterKeyMismatch, source?: string): string {
  return `the master mnemonic${source ? ` read from ${source}` : ""} derives ${m.derived} for project ${m.recorded.projectId} (wallet index ${m.recorded.walletIndex}), whose wallet is ${m.recorded.address}: not this deployment's key`;
}

/** A start refused because the master key is not the one the deployment's wallets were derived from. */
export class MasterKeyMismatchError extends Error {
  override name = "MasterKeyMismatchError";
}

/** What to do about words that are not a BIP-39 phrase where no wallet derived from them is recorded. */
export const NOT_BIP39_FIX = "check each word against the backup (a new deployment's key is best written by `agentwallet init`)";

/** What a start logs and `doctor` warns of words that are not a BIP-39 phrase but derive the recorded wallet. */
export const NOT_BIP39_KEPT = "they derive this deployment's wallets, so they are its key: keep them, and their backup, exactly as they are";

/**
 * The master key against the ledger, as a live start and `doctor` judge it:
 * - `mismatch`: it does not derive the recorded wallet;
 * - `not_bip39`: it is not a BIP-39 phrase (custody.ts `isBip39Phrase`). With no wallet recorded it is refused: a typo
 *   would give the deployment wallets its backup does not derive. With the recorded wallet derived from it, it is the
 *   deployment's key whatever it is, and only warned of;
 * - `ok`: a BIP-39 phrase that derives the recorded wallet, or with none recorded yet.
 */
export type MasterKeyVerdict =
  | { kind: "ok"; recorded: RecordedWallet | undefined }
  | { kind: "mismatch"; mismatch: MasterKeyMismatch }
  | { kind: "not_bip39"; recorded: RecordedWallet | undefined };

export function judgeMasterKey(custody: Pick<Custody, "addressOf">, recorded: RecordedWallet | undefined, bip39: boolean): MasterKeyVerdict {
  const mismatch = masterKeyMismatch(custody, recorded);
  if (mismatch) return { kind: "mismatch", mismatch };
  return bip39 ? { kind: "ok", recorded } : { kind: "not_bip39", recorded };
}

/**
 * At a live process's start: throws MasterKeyMismatchError when the key (read from `source`) is refused
 * (`judgeMasterKey`); answers the verdict otherwise, for the warning of words that are kept though not BIP-39.
 */
export async function refuseForeignMasterKey(projects: Pick<ProjectStore, "firstRecordedWallet">, custody: Pick<Custody, "addressOf">, source: string, bip39: boolean): Promise<MasterKeyVerdict> {
  const verdict = judgeMasterKey(custody, await projects.firstRecordedWallet(), bip39);
  if (verdict.kind === "mismatch") throw new MasterKeyMismatchError(`${describeMasterKeyMismatch(verdict.mismatch, source)}. Nothing was started: ${MASTER_KEY_MISMATCH_FIX}; \`agentwallet doctor\` runs the same check.`);
  if (verdict.kind === "not_bip39" && !verdict.recorded) throw new MasterKeyMismatchError(`the master mnemonic read from ${source} ${NOT_BIP39_PHRASE}. Nothing was started: ${NOT_BIP39_FIX}; \`agentwallet doctor\` runs the same check.`);
  return verdict;
}
