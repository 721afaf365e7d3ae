/**
 * Opening the configured ledger: the database (SQLite file or PostgreSQL URL), migrated to the latest
 * schema. Callers get the Ledger and a handle to close it, never the connection.
 */
import { existsSync } from "node:fs";
import { sql } from "kysely";
import type { Config } from "../config.ts";
import { newId, systemClock } from "../ids.ts";
import { type Dialect, openDb } from "./db.ts";
import { migrateToLatest } from "./migrations.ts";
import { Ledger } from "./store.ts";

/** `applied`: the migrations this opening ran (none on a database already at the latest schema). */
export type OpenedLedger = { dialect: Dialect; applied: string[]; close(): Promise<void> };

export async function openLedger(config: Config, opts: { checkpointPages?: number } = {}): Promise<{ ledger: Ledger; opened: OpenedLedger }> {
  const limits = config.databaseLimits;
  const opened = config.databaseUrl
    ? openDb({ kind: "postgres", url: config.databaseUrl, poolMax: limits.poolMax, poolWaitMs: limits.poolWaitMs })
    : openDb({ kind: "sqlite", path: config.sqlitePath, synchronous: config.sqliteSynchronous, busyTimeoutMs: limits.sqliteBusyTimeoutMs, checkpointPages: opts.checkpointPages });
  const applied = await migrateToLatest(opened.db, opened.dialect);
  return { ledger: new Ledger(opened.db, opened.dialect, systemClock, newId), opened: { dialect: opened.dialect, applied, close: () => opened.close() } };
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
