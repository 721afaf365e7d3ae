/**
 * A real AppContext over a real, throwaway database for benchmarks: a SQLite file in a temp dir
 * (WAL, synchronous as the service defaults it: FULL) or a fresh schema on PostgreSQL, migrated,
 * and removed again by `close()`. Built like the tests' context, from the service's own parts.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import pino from "pino";
import { createHdCustody } from "../../packages/server/src/chain/custody.ts";
import { loadConfig } from "../../packages/server/src/config.ts";
import type { AppContext } from "../../packages/server/src/context.ts";
import { createLogger } from "../../packages/server/src/deps.ts";
import { createMemoryRateLimiter } from "../../packages/server/src/http/rateLimit.ts";
import { newId, systemClock } from "../../packages/server/src/ids.ts";
import { type OpenedDb, openDb } from "../../packages/server/src/ledger/db.ts";
import { migrateToLatest } from "../../packages/server/src/ledger/migrations.ts";
import { Ledger } from "../../packages/server/src/ledger/store.ts";

export type BenchDialect = "sqlite" | "postgres";

// Not anvil's mnemonic: benchmark wallets must never coincide with the dev chain's funded accounts.
export const BENCH_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";

/** Used when neither --pg-url nor TEST_DATABASE_URL is given. */
export const DEFAULT_POSTGRES_URL = "postgres://postgres@127.0.0.1:5432/test";

export type BenchContextOptions = {
  dialect: BenchDialect;
  /** Per-token requests per minute. Benchmarks set it far above any load so nothing is throttled. */
  rateLimitPerMinute: number;
  logLevel: string;
  postgresUrl?: string;
};

export type BenchContext = {
  ctx: AppContext;
  dialect: BenchDialect;
  /** SQLite: the database file, for a second raw connection (seeding, query plans). */
  sqlitePath: string | undefined;
  /** PostgreSQL: a URL whose connections use the benchmark's schema. */
  postgresUrl: string | undefined;
  where: string;
  close(): Promise<void>;
};

export async function createBenchContext(options: BenchContextOptions): Promise<BenchContext> {
  const store = options.dialect === "sqlite" ? await openSqlite() : await openPostgres(options.postgresUrl ?? process.env.TEST_DATABASE_URL ?? DEFAULT_POSTGRES_URL);
  const rateLimiter = createMemoryRateLimiter(options.rateLimitPerMinute);
  const ctx: AppContext = {
    config: loadConfig({ AGENTWALLET_DATA_DIR: "/nonexistent-bench-dir", LOG_LEVEL: options.logLevel }),
    ledger: new Ledger(store.opened.db, store.opened.dialect, systemClock, newId),
    custody: createHdCustody(BENCH_MNEMONIC),
    clock: systemClock,
    newId,
    // Request logs go to /dev/null through the same pino destination type as stdout in production.
    logger: createLogger(options.logLevel, pino.destination({ dest: "/dev/null", sync: true }) as unknown as NodeJS.WritableStream),
    rateLimiter,
    rails: undefined,
    hooks: {},
    instanceId: `bench-${process.pid}`,
    bankAccountKey: new Uint8Array(32).fill(7),
  };
  return {
    ctx,
    dialect: options.dialect,
    sqlitePath: store.sqlitePath,
    postgresUrl: store.postgresUrl,
    where: store.where,
    async close() {
      await rateLimiter.close();
      await store.opened.close();
      await store.drop();
    },
  };
}

type Store = { opened: OpenedDb; sqlitePath?: string; postgresUrl?: string; where: string; drop(): Promise<void> };

async function openSqlite(): Promise<Store> {
  const dir = mkdtempSync(join(tmpdir(), "aw-bench-"));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  const path = join(dir, "bench.db");
  try {
    const opened = openDb({ kind: "sqlite", path });
    await migrateToLatest(opened.db, "sqlite");
    return { opened, sqlitePath: path, where: path, async drop() { remove(); } };
  } catch (err) {
    remove();
    throw err;
  }
}

async function openPostgres(baseUrl: string): Promise<Store> {
  const schema = `bench_${randomBytes(6).toString("hex")}`;
  await adminQuery(baseUrl, `create schema ${schema}`).catch((err: unknown) => {
    throw new Error(`Cannot create a schema on PostgreSQL at ${redactPassword(baseUrl)}: ${(err as Error).message}. Pass --pg-url or set TEST_DATABASE_URL.`, { cause: err });
  });
  const url = new URL(baseUrl);
  url.searchParams.set("options", `-c search_path=${schema}`);
  try {
    // Pool size and statement timeout stay at the service's defaults.
    const opened = openDb({ kind: "postgres", url: url.toString() });
    await migrateToLatest(opened.db, "postgres");
    return {
      opened,
      postgresUrl: url.toString(),
      where: `${redactPassword(baseUrl)} schema ${schema}`,
      drop: () => adminQuery(baseUrl, `drop schema ${schema} cascade`),
    };
  } catch (err) {
    await adminQuery(baseUrl, `drop schema if exists ${schema} cascade`);
    throw err;
  }
}

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

function redactPassword(url: string): string {
  const u = new URL(url);
  if (u.password) u.password = "***";
  return u.toString();
}
