/** Real databases for tests: a SQLite file in a temp dir, or a fresh schema on PostgreSQL. */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { type Generated, Kysely, SqliteDialect } from "kysely";
import pg from "pg";
import { type OpenedDb, openDb } from "../../src/ledger/db.ts";
import { migrateToLatest } from "../../src/ledger/migrations.ts";

export type TestDialect = "sqlite" | "postgres";
export const dialects: TestDialect[] = ["sqlite", "postgres"];

export type TestDb = OpenedDb & { url?: string; sqlitePath?: string; schema?: string; drop(): Promise<void> };

export function postgresUrl(): string {
  const url = process.env.TEST_DATABASE_URL;
  if (!url) throw new Error("TEST_DATABASE_URL is not set (the global setup should have started PostgreSQL)");
  return url;
}

/** A URL whose connections use a schema of their own, so test files never see each other's rows. */
export async function createPgSchema(): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const base = postgresUrl();
  const schema = `t_${randomBytes(6).toString("hex")}`;
  const admin = new pg.Client({ connectionString: base });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await admin.end();
  const u = new URL(base);
  u.searchParams.set("options", `-c search_path=${schema}`);
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

/** A migrated test database; `migrateTo`: only up to that migration (a database as an older version left it). */
export async function createTestDb(dialect: TestDialect, opts: { migrateTo?: string } = {}): Promise<TestDb> {
  if (dialect === "sqlite") {
    const dir = mkdtempSync(join(tmpdir(), "aw-sqlite-"));
    const path = join(dir, "test.db");
    const opened = openDb({ kind: "sqlite", path });
    await migrateToLatest(opened.db, "sqlite", opts.migrateTo);
    return { ...opened, sqlitePath: path, async drop() { await opened.close(); rmSync(dir, { recursive: true, force: true }); } };
  }
  const s = await createPgSchema();
  const opened = openDb({ kind: "postgres", url: s.url });
  await migrateToLatest(opened.db, "postgres", opts.migrateTo);
  return { ...opened, url: s.url, schema: s.schema, async drop() { await opened.close(); await s.drop(); } };
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
