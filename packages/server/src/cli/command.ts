/** What a CLI command is: a function of (config, args, options) → exit code, and its expected failure. */
import type { Config } from "../config.ts";
import { loadRecipientHashKey } from "../deps.ts";
import { openLedger } from "../ledger/open.ts";
import { newId, systemClock } from "../ids.ts";
import type { Ledger } from "../ledger/store.ts";

export type CommandIo = { json: boolean; out(human: string, data: unknown): void };
export type CommandInput = { config: Config; args: string[]; options: Record<string, string | string[] | boolean | undefined>; io: CommandIo };
export type Command = (input: CommandInput) => Promise<number>;

export class CliError extends Error {
  override name = "CliError";
}

export function need(options: CommandInput["options"], name: string): string {
  const v = options[name];
  if (typeof v !== "string" || v === "") throw new CliError(`--${name} is required`);
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
