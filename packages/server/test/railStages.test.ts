// Each rail's table of stage changes (a const beside its state's union) is the one docs/architecture.md
// shows under "Rail stages": a reader can check the code against the page, and this test does.
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { FIAT_TRANSITIONS } from "../src/rails/fiat/fiatState.ts";
import { USDC_TRANSITIONS } from "../src/rails/usdc/usdcState.ts";
import { X402_TRANSITIONS } from "../src/rails/x402/x402State.ts";

const page = readFileSync(new URL("../../../docs/architecture.md", import.meta.url), "utf8");

/** The stage table that follows the line naming `constName`: stage → the stages it may become. */
function documented(constName: string): Record<string, string[]> {
  const from = page.indexOf(`\`${constName}\``);
  expect(from, `docs/architecture.md names ${constName}`).toBeGreaterThan(0);
  const rows = page.slice(from).split("\n").slice(1);
  const table: Record<string, string[]> = {};
  for (const row of rows.slice(rows.findIndex((r) => r.startsWith("| `")))) {
    if (!row.startsWith("| `")) break;
    const cells = row.split("|").map((c) => c.trim());
    table[cells[1]!.replaceAll("`", "")] = [...cells[3]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!);
  }
  return table;
}

test.each([
  ["USDC_TRANSITIONS", USDC_TRANSITIONS],
  ["FIAT_TRANSITIONS", FIAT_TRANSITIONS],
  ["X402_TRANSITIONS", X402_TRANSITIONS],
] as const)("behavior: %s is the table docs/architecture.md shows", (name, transitions) => {
  expect(documented(name)).toEqual(transitions);
});
