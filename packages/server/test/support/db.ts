/**
 * Real databases for tests: a SQLite file in a temp dir, or a fresh schema on PostgreSQL, migrated; and the one
 * way tests put a Ledger on a database (`ledgerOn`, `createTestLedger`), so its construction is written here only.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { type Generated, Kysely, SqliteDialect } from "kysely";
import pg from "pg";
import { type Clock, newId, systemClock } from "../../src/ids.ts";
import { type OpenedDb, openDb } from "../../src/ledger/db.ts";
import { migrateToLatest } from "../../src/ledger/migrations.ts";
import { Ledger } from "../../src/ledger/store.ts";

export type TestDialect = "sqlite" | "postgres";
export const dialects: TestDialect[] = ["sqlite", "postgres"];

/** `dir`: the SQLite file's directory (removed by `drop`). */
export type TestDb = OpenedDb & { url?: string; sqlitePath?: string; dir?: string; schema?: string; drop(): Promise<void> };

export type TestDbOptions = {
  /** Migrate up to this migration only (by default to the latest). */
  migrateTo?: string;
  /** SQLite: the file's name in its directory (`agentwallet.db` is where `agentwallet serve` finds it in its data directory), or `:memory:`. */
  sqliteFile?: string;
  /** SQLite: the prefix of its temporary directory's name. */
  dirPrefix?: string;
  /** PostgreSQL: more `-c name=value` settings for every session (e.g. `-c deadlock_timeout=60s`). */
  pgSettings?: string;
};

export function postgresUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error("TEST_DATABASE_URL is not set (the global setup should have started PostgreSQL)");
  return url;
}

/** A URL whose connections use a schema of their own, so test files never see each other's rows; `settings` are added to each session's. */
export async function createPgSchema(settings?: string): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const base = postgresUrl();
  const schema = `t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const u = new URL(base);
  u.searchParams.set("options", settings ? `-c search_path=${schema} ${settings}` : `-c search_path=${schema}`);
  return {
    url: u.toString(),
    schema,
    async drop() {
      const c = new pg.Client({ connectionString: base });
      await c.connect();
      await c.query(`drop schema ${schema} cascade`);
      await c.end();
    },
  };
}

export async function createTestDb(dialect: TestDialect, o: TestDbOptions = {}): Promise<TestDb> {
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), o.dirPrefix ?? "aw-sqlite-"));
    const path = o.sqliteFile === ":memory:" ? o.sqliteFile : join(dir, o.sqliteFile ?? "test.db");
    const opened = openDb({ kind: "sqlite", path });
    await migrateToLatest(opened.db, "sqlite", o.migrateTo);
    return { ...opened, sqlitePath: path, dir, async drop() { await opened.close(); rmSync(dir, { recursive: true, force: true }); } };
  }
  const s = await createPgSchema(o.pgSettings);
  const opened = openDb({ kind: "postgres", url: s.url });
  await migrateToLatest(opened.db, "postgres", o.migrateTo);
  return { ...opened, url: s.url, schema: s.schema, async drop() { await opened.close(); await s.drop(); } };
}

/** The one way tests put a Ledger on a database: real ids, and the system clock unless `clock` is given. */
export function ledgerOn(db: Pick<OpenedDb, "db" | "dialect">, clock: Clock = systemClock): Ledger {
  return new Ledger(db.db, db.dialect, clock, newId);
}

export type TestLedger = TestDb & { ledger: Ledger };

/** A test database (`createTestDb`) with a Ledger on it; `drop` closes and removes the database. */
export async function createTestLedger(dialect: TestDialect, o: TestDbOptions & { clock?: Clock } = {}): Promise<TestLedger> {
  const db = await createTestDb(dialect, o);
  return { ...db, ledger: ledgerOn(db, o.clock) };
}

export type TableT = { t: { id: Generated<number>; v: string } };

/**
 * A SQLite file in WAL mode with `synchronous=FULL` and one table `t (id, v unique)`, with Kysely over
 * the same connection: for the group commit's and the log sync's tests. `close` removes it.
 */
export function openWalTable(prefix: string): { path: string; sqlite: SQLite.Database; db: Kysely<TableT>; close(): Promise<void> } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const path = join(dir, "t.db");
  const sqlite = new SQLite(path);
  sqlite.pragma("journal_mode = WAL");
  sqlite.pragma("synchronous = FULL");
  sqlite.exec("create table t (id integer primary key, v text not null unique)");
  const db = new Kysely<TableT>({ dialect: new SqliteDialect({ database: { close: () => sqlite.close(), prepare: (text: string) => sqlite.prepare(text) } }) });
  return {
    path,
    sqlite,
    db,
    async close() {
      await db.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
