// The in-process harness of other packages' end-to-end tests and of the benches: a start that fails leaves nothing
// behind, neither its data directory (which holds the sandbox's master mnemonic) nor a running chain or server.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "vitest";
import { startTestServer } from "../src/testing/harness.ts";

test("a harness start that fails removes its data directory with the master mnemonic in it", async () => {
  // A temporary directory of this test's own, so other files' harnesses are not counted.
  const own = mkdtempSync(join(tmpdir(), "aw-harness-test-"));
  const before = process.env.TMPDIR;
  process.env.TMPDIR = own;
  try {
    // Nothing listens on port 1: the ledger cannot open, after the sandbox's chain has started and its secrets were written.
    await expect(startTestServer({ database: "postgres", databaseUrl: "postgres://postgres@127.0.0.1:1/none" })).rejects.toThrow();
    expect(readdirSync(own)).toEqual([]);
  } finally {
    if (before === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = before;
    rmSync(own, { recursive: true, force: true });
  }
}, 60_000);
