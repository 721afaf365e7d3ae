/**
 * Runs `agentwallet serve` as a real child process in live mode against a test chain, so tests can
 * run several processes on one database, and kill -9 them.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { resolve } from "node:path";
import type { DevChain } from "@agentwallet/devchain";
import type { Ledger } from "../../src/ledger/store.ts";
import { TEST_MNEMONIC } from "./mnemonic.ts";
import { type TestDialect, createTestLedger } from "./db.ts";
import { freePort } from "./net.ts";
import { agentwalletBin } from "./testBuild.ts";

export { freePort };

const root = resolve(import.meta.dirname, "../../../..");


export function liveEnv(dev: DevChain, db: { dataDir?: string; databaseUrl?: string }): NodeJS.ProcessEnv {
  return {
    BASE_RPC_URL: dev.rpcUrl,
    USDC_ADDRESS: dev.usdcAddress,
    AGENTWALLET_MASTER_MNEMONIC: TEST_MNEMONIC,
    RELAYER_PRIVATE_KEY: dev.accounts.relayer.privateKey,
    TREASURY_ADDRESS: dev.accounts.treasury.address,
    DEPOSIT_CONFIRMATIONS: "1",
    PAYMENT_CONFIRMATIONS: "1",
    RATE_LIMIT_PER_MINUTE: "1000000",
    WATCHER_INTERVAL_MS: "100",
    WORKER_INTERVAL_MS: "100",
    PAYMENT_REQUEST_LEASE_MS: "3000",
    LOG_LEVEL: "warn",
    // Test files run side by side against one PostgreSQL (max_connections 100), and a spawned server opens a pool for
    // its requests and one for its settlement thread: at the default 16 each, two files with two servers each asked
    // for more than the server allows ("sorry, too many clients already").
    DATABASE_POOL_MAX: "8",
    DATABASE_URL: db.databaseUrl ?? "",
    AGENTWALLET_DATA_DIR: db.dataDir ?? "",
  };
}

export type ServerProcess = { child: ChildProcess; baseUrl: string; output: () => string; kill9(): Promise<void>; stop(): Promise<void> };

/** `readyMs` bounds the start-up (default 90 s: a busy two-core machine starts a server in 30 s or more). */
export async function spawnServer(env: NodeJS.ProcessEnv, port?: number, readyMs = 90_000): Promise<ServerProcess> {
  const p = port ?? (await freePort());
  const child = spawn(process.execPath, [agentwalletBin(), "serve", "--port", String(p), "--host", "127.0.0.1"], { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let out = "";
  child.stdout!.on("data", (d) => (out = (out + d).slice(-20_000)));
  child.stderr!.on("data", (d) => (out = (out + d).slice(-20_000)));
  const baseUrl = `http://127.0.0.1:${p}`;
  const exited = new Promise<void>((r) => child.once("exit", () => r()));
  // After "exit", the output may still be arriving: "close" comes once it is all read.
  const closed = new Promise<void>((r) => child.once("close", () => r()));
  const deadline = Date.now() + readyMs;
  for (;;) {
    if (child.exitCode !== null) {
      await closed;
      throw new Error(`server exited during start-up (exit code ${child.exitCode}):\n${out}`);
    }
    try {
      // Serving, and settling: a test that kills the process then catches payments part-way.
      const ready = await fetch(`${baseUrl}/readyz`);
      if (ready.ok && ((await ready.json()) as { settlement?: string }).settlement === "running") break;
    } catch {
      /* not listening yet */
    }
    if (Date.now() > deadline) {
      child.kill("SIGKILL");
      throw new Error(`server was not ready with settlement running within ${readyMs / 1000} s:\n${out}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    child,
    baseUrl,
    output: () => out,
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill("SIGTERM");
      const t = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(t);
    },
  };
}

/**
 * A migrated database for `agentwallet serve` processes to share (a SQLite file in a directory of its own, or a
 * PostgreSQL schema), a Ledger on it for setting up and checking, the processes' live environment on `dev`, and
 * `close`, which removes it all.
 */
export async function openLiveDeployment(dev: DevChain, dialect: TestDialect, prefix: string): Promise<{ ledger: Ledger; env: NodeJS.ProcessEnv; close: () => Promise<void> }> {
  const db = await createTestLedger(dialect, { sqliteFile: "agentwallet.db", dirPrefix: prefix });
  const env = liveEnv(dev, db.url ? { databaseUrl: db.url } : { dataDir: db.dir! });
  return { ledger: db.ledger, env, close: db.drop };
}
