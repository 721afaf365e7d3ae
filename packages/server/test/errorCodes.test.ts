// docs/errors.md is the table of error codes a client programs against; ERROR_CODES (domain/errorCodes.ts) is the
// union every throw site is typed by. They are held to each other both ways: a code the server can answer with
// is documented, and a documented code is one the server can answer with. Payments' failure codes
// (`failure_code`, their own section of the page) are checked against FAILURE_CODES the same way, and why a
// payment waits (`waiting.code`) against WAITING_CODES.
import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { ERROR_CODES } from "../src/domain/errorCodes.ts";
import { DomainError, badRequest } from "../src/domain/errors.ts";
import { ApiError } from "../src/http/apiError.ts";
import { WAITING_CODES } from "../src/domain/payment.ts";
import { FAILURE_CODES } from "../src/ledger/failureCodes.ts";

const page = readFileSync(new URL("../../../docs/errors.md", import.meta.url), "utf8");
const FAILURE_SECTION = "Failure codes of payments";
const WAITING_SECTION = "Why a payment waits";

/** The `code`s in the Code column of every table of the page, by the section (`## …`) they are in. */
function documentedCodes(markdown: string): Map<string, Set<string>> {
  const bySection = new Map<string, Set<string>>();
  let section = "";
  let codeColumn: number | undefined;
  for (const line of markdown.split("\n")) {
    if (line.startsWith("## ")) section = line.slice(3).trim();
    if (!line.startsWith("|")) {
      codeColumn = undefined;
      continue;
    }
    const cells = line.split("|").slice(1, -1).map((c) => c.trim());
    if (codeColumn === undefined) {
      // A table's first row names its columns; tables without a Code column are not code tables.
      codeColumn = cells.indexOf("Code");
      continue;
    }
    if (codeColumn < 0 || /^-+$/.test(cells[0] ?? "")) continue;
    const codes = bySection.get(section) ?? new Set<string>();
    for (const [, code] of (cells[codeColumn] ?? "").matchAll(/`([^`]+)`/g)) codes.add(code!);
    bySection.set(section, codes);
  }
  return bySection;
}

const sections = documentedCodes(page);
const errorCodesDocumented = new Set([...sections].filter(([name]) => name !== FAILURE_SECTION && name !== WAITING_SECTION).flatMap(([, codes]) => [...codes]));

test("every code the server can answer with is in docs/errors.md", () => {
  expect(ERROR_CODES.filter((c) => !errorCodesDocumented.has(c))).toEqual([]);
});

test("every code docs/errors.md lists is one the server can answer with", () => {
  const known: ReadonlySet<string> = new Set(ERROR_CODES);
  expect([...errorCodesDocumented].filter((c) => !known.has(c))).toEqual([]);
});

test("the failure codes of payments in docs/errors.md are exactly FAILURE_CODES", () => {
  expect([...(sections.get(FAILURE_SECTION) ?? [])].sort()).toEqual([...FAILURE_CODES].sort());
});

test("why a payment waits, in docs/errors.md, is exactly WAITING_CODES", () => {
  expect([...(sections.get(WAITING_SECTION) ?? [])].sort()).toEqual([...WAITING_CODES].sort());
});

test("ERROR_CODES names each code once, in snake_case", () => {
  expect(new Set(ERROR_CODES).size).toBe(ERROR_CODES.length);
  expect(ERROR_CODES.filter((c) => !/^[a-z][a-z0-9]*(_[a-z0-9]+)*$/.test(c))).toEqual([]);
});

test("error: a code outside the list does not typecheck (npm run typecheck holds these lines to it)", () => {
  // @ts-expect-error -- a misspelt code
  const misspelt = badRequest("invalid_reqest", "x");
  // @ts-expect-error -- a code nobody listed
  const unlisted = new ApiError(429, "slow_down", "x");
  expect(misspelt).toBeInstanceOf(DomainError);
  expect(unlisted.code).toBe("slow_down");
});

test("the reader finds codes in a table's Code column only, and no code outside one", () => {
  const found = documentedCodes(
    ["## A", "| Status | Code | Meaning |", "|---|---|---|", "| 400 | `one`, `two` | not `three` |", "", "`four` in prose", "| Meaning | How |", "|---|---|", "| `five` | x |"].join("\n"),
  );
  expect([...found.get("A")!]).toEqual(["one", "two"]);
  expect(errorCodesDocumented.size).toBeGreaterThan(60);
});
