// The database's waits as settings: their defaults, and SQLite's busy timeout never below 100 ms (the settlement
// thread writes on a connection of its own: with no wait, ordinary payments would be refused whenever its commit
// overlapped theirs).
import { expect, test } from "vitest";
import { ConfigError, loadConfig } from "../src/config.ts";

const DATA_DIR = "/tmp/aw-config-unused";

test("default: a pool of 16, a 10 s wait for a connection, a 5 s SQLite busy timeout", () => {
  expect(loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR }).databaseLimits).toEqual({ poolMax: 16, poolWaitMs: 10_000, sqliteBusyTimeoutMs: 5_000 });
});

test("error: a SQLite busy timeout under 100 ms is refused, naming the setting", () => {
  for (const value of ["0", "99"]) {
    expect(() => loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, SQLITE_BUSY_TIMEOUT_MS: value })).toThrow(ConfigError);
    expect(() => loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, SQLITE_BUSY_TIMEOUT_MS: value })).toThrow(/SQLITE_BUSY_TIMEOUT_MS/);
  }
  expect(loadConfig({ AGENTWALLET_DATA_DIR: DATA_DIR, SQLITE_BUSY_TIMEOUT_MS: "100" }).databaseLimits.sqliteBusyTimeoutMs).toBe(100);
});
