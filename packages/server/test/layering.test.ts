// Only ledger/ touches the database: no module of the server outside it reads a ledger's connection
// (`.db`) or imports Kysely. The import rule of .dependency-cruiser.cjs catches the imports; this test
// also catches a connection reached through a property, which no import shows.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative, sep } from "node:path";
import { fileURLToPath } from "node:url";
import { expect, test } from "vitest";

const src = fileURLToPath(new URL("../src/", import.meta.url));

/** The server's source files outside ledger/. */
function sourcesOutsideLedger(): string[] {
  return (readdirSync(src, { recursive: true }) as string[])
    .filter((f) => f.endsWith(".ts") && !f.startsWith(`ledger${sep}`))
    .map((f) => join(src, f));
}

/** Each line of `files` that `pattern` matches, as `file:line: text`. */
function matches(files: string[], pattern: RegExp): string[] {
  return files.flatMap((file) =>
    readFileSync(file, "utf8")
      .split("\n")
      .flatMap((line, i) => (pattern.test(line) ? [`${relative(src, file)}:${i + 1}: ${line.trim()}`] : [])),
  );
}

// A property named `db` (`ledger.db`, `ctx.ledger.db.selectFrom`), not a file name such as "agentwallet.db".
const dbProperty = /[\w$)\]]\s*\.\s*db\b(?!["'`])/;
const kyselyImport = /\bfrom\s+["']kysely["']|\bimport\s*\(\s*["']kysely["']|\brequire\s*\(\s*["']kysely["']/;

test("layering: outside ledger/, no module of the server reads a database connection", () => {
  const files = sourcesOutsideLedger();
  expect(files.length).toBeGreaterThan(50);
  expect(matches(files, dbProperty)).toEqual([]);
});

test("layering: outside ledger/, no module of the server imports Kysely", () => {
  expect(matches(sourcesOutsideLedger(), kyselyImport)).toEqual([]);
});

test("the checks find what they look for", () => {
  expect(dbProperty.test("await ctx.ledger.db.selectFrom(\"kv\")")).toBe(true);
  expect(dbProperty.test("renderWebhookEvent(ledger.db, d)")).toBe(true);
  expect(dbProperty.test('sqlitePath: resolve(dataDir, "agentwallet.db"),')).toBe(false);
  expect(kyselyImport.test('import { sql } from "kysely";')).toBe(true);
  expect(kyselyImport.test('import type { Kysely } from "kysely";')).toBe(true);
});
