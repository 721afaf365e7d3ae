/**
 * The one place adapters are built from configuration: database, ledger, custody, rate limiter.
 * Chain and rails are added by the sandbox/live start-up (server.ts).
 */
import { createHmac, randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { sql } from "kysely";
import { Redis } from "ioredis";
import pino, { type Logger } from "pino";
import type { Config } from "./config.ts";
import type { AppContext } from "./context.ts";
import { createHdCustody, loadMasterMnemonic } from "./chain/custody.ts";
import { createSigningPool } from "./chain/signingPool.ts";
import { type OpenedDb, openDb } from "./ledger/db.ts";
import { migrateToLatest } from "./ledger/migrations.ts";
import { Ledger } from "./ledger/store.ts";
import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter } from "./http/rateLimit.ts";
import { newId, systemClock } from "./ids.ts";

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      // Belt and braces: nothing we log carries these, and if a future change did they would be censored.
      redact: { paths: ["req.headers.authorization", "headers.authorization", "authorization", "token", "mnemonic", "privateKey"], censor: "[redacted]" },
      base: { service: "agentwallet" },
    },
    destination as never,
  );
}

/**
 * SQLite with settlement in its own thread: the request thread's connection leaves WAL checkpoints
 * (copying the log into the database file, several ms each) to the settlement thread, which runs one
 * every 200 ms; it does one itself only if the log grows this far (~64 MB) because the settlement
 * thread is not running.
 */
export const REQUEST_THREAD_CHECKPOINT_PAGES = 16_000;

export async function openLedger(config: Config, opts: { checkpointPages?: number } = {}): Promise<{ ledger: Ledger; opened: OpenedDb }> {
  const opened = config.databaseUrl
    ? openDb({ kind: "postgres", url: config.databaseUrl })
    : openDb({ kind: "sqlite", path: config.sqlitePath, synchronous: config.sqliteSynchronous, checkpointPages: opts.checkpointPages });
  await migrateToLatest(opened.db, opened.dialect);
  return { ledger: new Ledger(opened.db, opened.dialect, systemClock, newId), opened };
}

/**
 * Whether the configured database already holds an Agent Wallet ledger (its migrations table), without
 * creating anything: SQLite is looked for as a file, PostgreSQL is asked. The admin CLI's commands other than
 * `serve` and `migrate` refuse to run without one, so a missing DATABASE_URL never silently starts an empty
 * SQLite ledger beside a PostgreSQL deployment.
 */
export async function ledgerExists(config: Config): Promise<boolean> {
  if (!config.databaseUrl) return existsSync(config.sqlitePath);
  const opened = openDb({ kind: "postgres", url: config.databaseUrl, poolMax: 1 });
  try {
    const row = (await sql<{ t: string | null }>`select to_regclass('kysely_migration')::text as t`.execute(opened.db)).rows[0];
    return row?.t != null;
  } finally {
    await opened.close();
  }
}

export function createRateLimiter(config: Config): RateLimiter {
  if (!config.redisUrl) return createMemoryRateLimiter(config.rateLimitPerMinute);
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2, connectTimeout: 5_000, enableOfflineQueue: true });
  return createRedisRateLimiter(redis, config.rateLimitPerMinute);
}

/**
 * The key bank accounts in spending controls are hashed with, derived from the master key source
 * (so no further secret is needed and the database holds none): the same on every process.
 */
export function loadRecipientHashKey(config: Config): Uint8Array {
  return createHmac("sha256", masterMnemonic(config)).update("agentwallet recipient hash v1").digest();
}

/**
 * The AES-256 key webhook endpoints' signing secrets are encrypted with, derived from the master key
 * source like the recipient hash key: the database holds no secret it could open by itself.
 */
export function loadWebhookSecretKey(config: Config): Uint8Array {
  return createHmac("sha256", masterMnemonic(config)).update("agentwallet webhook secret key v1").digest();
}

function masterMnemonic(config: Config): string {
  return loadMasterMnemonic({
    mnemonic: config.custody.mnemonic,
    file: config.custody.mnemonicFile,
    sandboxFile: config.mode === "sandbox" ? join(config.dataDir, "master-mnemonic") : undefined,
  });
}

export function loadCustody(config: Config) {
  const mnemonic = masterMnemonic(config);
  return createHdCustody(mnemonic, { pool: createSigningPool(mnemonic, 1) });
}

export async function buildContext(config: Config, logger: Logger, opts: { checkpointPages?: number } = {}): Promise<{ ctx: AppContext; close(): Promise<void> }> {
  const { ledger, opened } = await openLedger(config, opts);
  const rateLimiter = createRateLimiter(config);
  const ctx: AppContext = {
    config,
    ledger,
    custody: loadCustody(config),
    clock: systemClock,
    newId,
    logger,
    rateLimiter,
    rails: undefined,
    hooks: {},
    instanceId: `${process.pid}-${randomBytes(4).toString("hex")}`,
    recipientHashKey: loadRecipientHashKey(config),
    webhookSecretKey: loadWebhookSecretKey(config),
  };
  return {
    ctx,
    async close() {
      await rateLimiter.close();
      await ctx.custody.close();
      await opened.close();
    },
  };
}
