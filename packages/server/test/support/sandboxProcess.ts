/**
 * A sandbox server run as a child process over a chain and a SQLite file of the test's own, so a test can
 * kill -9 it and start another on the same state: the chain, the data directory with its migrated
 * database, a Ledger on it for setting up and checking, and the child's environment.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import { newId, systemClock } from "../../src/ids.ts";
import { type OpenedDb, openDb } from "../../src/ledger/db.ts";
import { migrateToLatest } from "../../src/ledger/migrations.ts";
import { Ledger } from "../../src/ledger/store.ts";
import { TEST_MNEMONIC } from "./context.ts";

export type SandboxProcessFixture = {
  dev: DevChain;
  dir: string;
  ledger: Ledger;
  /** The child's environment: the sandbox on this chain and directory, fast intervals, and `extra`. */
  env(extra?: NodeJS.ProcessEnv): NodeJS.ProcessEnv;
  close(): Promise<void>;
};

export async function startSandboxProcessFixture(prefix: string): Promise<SandboxProcessFixture> {
  const dev = await startDevChain();
  const dir = mkdtempSync(join(tmpdir(), `aw-${prefix}-`));
  let opened: OpenedDb | undefined;
  try {
    opened = openDb({ kind: "sqlite", path: join(dir, "agentwallet.db") });
    await migrateToLatest(opened.db, "sqlite");
  } catch (err) {
    await opened?.close();
    await dev.stop();
    throw err;
  }
  const db = opened;
  return {
    dev,
    dir,
    ledger: new Ledger(db.db, "sqlite", systemClock, newId),
    env: (extra = {}) => ({
      SANDBOX_CHAIN_RPC_URL: dev.rpcUrl,
      BASE_RPC_URL: "",
      DATABASE_URL: "",
      AGENTWALLET_DATA_DIR: dir,
      AGENTWALLET_MASTER_MNEMONIC: TEST_MNEMONIC,
      DEPOSIT_CONFIRMATIONS: "1",
      WATCHER_INTERVAL_MS: "100",
      WORKER_INTERVAL_MS: "100",
      RATE_LIMIT_PER_MINUTE: "1000000",
      LOG_LEVEL: "warn",
      ...extra,
    }),
    async close() {
      await dev.stop();
      await db.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
