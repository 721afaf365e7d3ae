/**
 * `agentwallet init`: sets up a deployment's database and master key, and says what is left to do. The
 * database is created or migrated and records this configuration's mode and chain (as `migrate` does,
 * services/deployment.ts); the master mnemonic is written to its file (or taken from where it is); the
 * first admin credential is created when the deployment has no active one. Run again, it changes nothing.
 */
import { join } from "node:path";
import type { Address, Hex } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { type Config, describeDatabase } from "../config.ts";
import { ensureMnemonicFile } from "../chain/mnemonicFile.ts";
import type { Clock, IdGenerator } from "../ids.ts";
import { openLedger } from "../ledger/open.ts";
import { createAdminCredential } from "./adminCredentials.ts";
import { type DeploymentRecord, claimDeployment } from "./deployment.ts";

export type InitReport = {
  database: string;
  dialect: "sqlite" | "postgres";
  mode: DeploymentRecord["mode"];
  chain_id: number;
  /** Migrations run now (none on a database at the latest schema). */
  migrations_applied: string[];
  /** Whether the deployment's mode was recorded now (false: it was recorded before). */
  mode_recorded: boolean;
  mnemonic: { source: "file" | "environment"; path: string | undefined; created: boolean };
  /** The admin credential created now, shown this once; null when an active one exists. */
  admin_credential: { id: string; name: string; credential: string } | null;
  changed: boolean;
  /** What the operator still has to do, in order. */
  todo: string[];
};

/** Where the mnemonic is written when AGENTWALLET_MASTER_MNEMONIC_FILE names no file. */
export const defaultMnemonicPath = (config: Pick<Config, "dataDir">) => join(config.dataDir, "master-mnemonic");

export async function initDeployment(config: Config, deps: { clock: Clock; newId: IdGenerator }): Promise<InitReport> {
  const path = config.custody.mnemonic ? undefined : (config.custody.mnemonicFile ?? defaultMnemonicPath(config));
  // The key before the database: a file that does not read as a mnemonic stops init before anything is written.
  const created = path ? ensureMnemonicFile(path).created : false;
  const { ledger, opened } = await openLedger(config);
  try {
    const before = await ledger.deployment.get();
    const record = await claimDeployment({ ledger, clock: deps.clock }, config, describeDatabase(config));
    const active = (await ledger.adminCredentials.list(1_000)).some((c) => !c.revoked_at);
    const credential = active ? null : await createAdminCredential({ ledger, clock: deps.clock, newId: deps.newId }, { name: "first operator (agentwallet init)" });
    const report = {
      database: describeDatabase(config),
      dialect: opened.dialect,
      mode: record.mode,
      chain_id: record.chain_id,
      migrations_applied: opened.applied,
      mode_recorded: before === undefined,
      mnemonic: { source: path ? "file" : "environment", path, created } as const,
      admin_credential: credential && { id: credential.id, name: credential.name, credential: credential.credential },
      changed: created || opened.applied.length > 0 || before === undefined || credential !== null,
    };
    return { ...report, todo: todo(config, path) };
  } finally {
    await opened.close();
  }
}

function todo(config: Config, mnemonicPath: string | undefined): string[] {
  const steps: string[] = [];
  if (mnemonicPath && config.custody.mnemonicFile !== mnemonicPath) steps.push(`Set AGENTWALLET_MASTER_MNEMONIC_FILE=${mnemonicPath} in the service's environment.`);
  if (mnemonicPath) steps.push(`Back up ${mnemonicPath} offline (docs/deploy.md, "Keys"): every project's wallet derives from it; lost, their funds are lost.`);
  else steps.push("Move the mnemonic from AGENTWALLET_MASTER_MNEMONIC into a file of mode 0600 and set AGENTWALLET_MASTER_MNEMONIC_FILE: the environment shows in process listings.");
  const relayer = relayerAddress(config.custody.relayerPrivateKey);
  if (!relayer) steps.push("Create the relayer account (a fresh key used for nothing else, e.g. `cast wallet new`), set RELAYER_PRIVATE_KEY, and send it ETH on Base for gas.");
  else steps.push(`Fund the relayer ${relayer} with ETH on Base for gas (doctor estimates its runway).`);
  if (!config.custody.treasuryAddress) steps.push("Set TREASURY_ADDRESS to an address you control outside Agent Wallet: platform fees go there.");
  steps.push("Run `agentwallet doctor` with the service's environment; start the server when no check fails.");
  return steps;
}

function relayerAddress(key: string | undefined): Address | undefined {
  try {
    return key ? privateKeyToAccount(key as Hex).address : undefined;
  } catch {
    return undefined;
  }
}
