/** What a CLI command is: a function of (config, args, options) → exit code, and its expected failure. */
import type { Config } from "../config.ts";

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
