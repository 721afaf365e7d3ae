// Every command has its own `--help` entry (cli/help.ts), and every entry is a command: the two lists move together.
import { expect, test } from "vitest";
import { commands } from "../src/cli/commands.ts";
import { COMMAND_HELP } from "../src/cli/help.ts";

test("behavior: every command has its own help, starting with its usage line and showing an example", () => {
  expect(Object.keys(COMMAND_HELP).sort()).toEqual(Object.keys(commands).sort());
  for (const [name, help] of Object.entries(COMMAND_HELP)) {
    expect(help.startsWith(`Usage: agentwallet ${name}`), name).toBe(true);
    expect(help, name).toMatch(/\nExample:\n  \S/);
  }
});
