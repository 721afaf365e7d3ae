/** What a CLI command is: a function of (config, args, options) → exit code, and its expected failure. */
import { type Config, describeDatabase, freezeConfig } from "../config.ts";
import { loadRecipientHashKey } from "../masterKeys.ts";
import { openLedger } from "../ledger/open.ts";
import { newId, systemClock } from "../ids.ts";
import { userInfo } from "node:os";
import type { Actor } from "../domain/audit.ts";
import type { Ledger } from "../ledger/store.ts";
import { type DeploymentRecord, mismatch, modeOfConfig } from "../services/deployment.ts";

export type CommandIo = { json: boolean; out(human: string, data: unknown): void };
/** `deployment`: the database's record (services/deployment.ts); undefined for `serve`, `migrate`, `sandbox info`, and a database no server has recorded yet. */
export type CommandInput = { config: Config; deployment?: DeploymentRecord; args: string[]; options: Record<string, string | string[] | boolean | undefined>; io: CommandIo };
export type Command = (input: CommandInput) => Promise<number>;

/** A command's expected failure at run time (a project that does not exist, a state that forbids it): exit 1. */
export class CliError extends Error {
  override name = "CliError";
}

/** A usage mistake (a missing or malformed option or argument, an unknown command): exit 2, as the README says. */
export class UsageError extends CliError {
  override name = "UsageError";
}

export function need(options: CommandInput["options"], name: string): string {
  const v = options[name];
  if (typeof v !== "string" || v === "") throw new UsageError(`--${name} is required`);
  return v;
}

/** The first argument, or a usage mistake naming the command's usage. */
export function needArg(args: string[], usage: string): string {
  const v = args[0];
  if (!v) throw new UsageError(`usage: agentwallet ${usage}`);
  return v;
}

/**
 * What the service functions need, for one command: the ledger (closed afterwards), the clock, ids, the
 * configuration and the recipient hash key, loaded only if a bank account needs it.
 */
export type CliServices = { ledger: Ledger; clock: typeof systemClock; newId: typeof newId; config: Config; recipientHashKey: () => Uint8Array };

export async function withServices<T>(config: Config, fn: (s: CliServices) => Promise<T>): Promise<T> {
  const { ledger, opened } = await openLedger(config);
  let key: Uint8Array | undefined;
  try {
    return await fn({ ledger, clock: systemClock, newId, config, recipientHashKey: () => (key ??= loadRecipientHashKey(config)) });
  } finally {
    await opened.close();
  }
}

/** The deployment's record, or undefined on a database that has none yet. */
export function readDeployment(config: Config): Promise<DeploymentRecord | undefined> {
  return withServices(config, (c) => c.ledger.deployment.get());
}

/**
 * The configuration a command runs with on a database of this record. A shell without BASE_RPC_URL says
 * nothing of the mode, so a command that signs nothing (`adopts`) runs in the recorded one: live tokens on
 * a live deployment, no sandbox key file beside it. A shell that names the other mode is refused, as a
 * server would be.
 */
export function configOfDeployment(config: Config, record: DeploymentRecord, adopts: boolean): Config {
  if (modeOfConfig(config) === record.mode) return config;
  if (adopts && config.mode === "sandbox" && record.mode === "live") return freezeConfig({ ...config, mode: "live" });
  throw mismatch(record, config, describeDatabase(config));
}

/**
 * Who acts from the CLI, for the audit log and a decision's record: the account that runs it (`cli:<user>`).
 * The CLI runs where the database is, the root of trust, so it has no role and no client address.
 */
export function cliActor(): Actor {
  let user = "";
  try {
    user = userInfo().username;
  } catch {
    user = "";
  }
  return { id: user ? `cli:${user}` : "cli", name: user || "cli", role: null, ip: null };
}
