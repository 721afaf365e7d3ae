/**
 * A sandbox server run as a child process over a chain and a SQLite file of the test's own, so a test can
 * kill -9 it and start another on the same state: the chain, the data directory with its migrated
 * database, a Ledger on it for setting up and checking, and the child's environment.
 */
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import type { Ledger } from "../../src/ledger/store.ts";
import { TEST_MNEMONIC } from "./context.ts";
import { createTestLedger, type TestLedger } from "./db.ts";

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
  let db: TestLedger;
  try {
    db = await createTestLedger("sqlite", { sqliteFile: "agentwallet.db", dirPrefix: `aw-${prefix}-` });
  } catch (err) {
    await dev.stop();
    throw err;
  }
  const dir = db.dir!;
  return {
    dev,
    dir,
    ledger: db.ledger,
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
      await db.drop();
    },
  };
}
