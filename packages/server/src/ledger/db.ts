/**
 * Opens the database: better-sqlite3 (WAL, synchronous=FULL by default: this is money) in the data
 * directory, or PostgreSQL when a URL is given. One Kysely code path serves both.
 */
import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from "node:fs";
import { dirname } from "node:path";
import SQLite from "better-sqlite3";
import { type CompiledQuery, Kysely, PostgresDialect, type PostgresPool, type PostgresPoolClient, SqliteDialect } from "kysely";
import pg from "pg";
import { type GroupCommit, createGroupCommit } from "./groupCommit.ts";
import { createLogSync } from "./logSync.ts";
import type { Database } from "./schema.ts";
import { SQLITE_SHA256_FUNCTION, sqliteSha256 } from "./evidenceHash.ts";

export type Dialect = "sqlite" | "postgres";

/** Prepared SQLite statements kept for reuse; the service issues a few dozen distinct ones. */
const STATEMENT_CACHE_MAX = 500;
export type Db = Kysely<Database>;

/**
 * What a SQLite database opened by `openDb` offers beside Kysely, on its one connection:
 * - `group`: the group commit for the ledger's hot writes (groupCommit.ts);
 * - `read`: runs a read at once on the calling stack, skipping the driver's queue — but only when no
 *   transaction is open on the connection (one of Kysely's, open across an `await`, would show its
 *   uncommitted rows); then it answers undefined and the caller goes through Kysely.
 */
export type SqliteDirect = { group: GroupCommit; read<R>(query: CompiledQuery<R>): R[] | undefined };
const sqliteDirect = new WeakMap<Db, SqliteDirect>();

/** Undefined for PostgreSQL (and for a Kysely instance not opened here). */
export function sqliteDirectOf(db: Db): SqliteDirect | undefined {
  return sqliteDirect.get(db);
}

/**
 * PostgreSQL: a compiled query run on the pool as a named prepared statement, parsed and planned once per
 * connection instead of on every call. For statements of one fixed text that requests run again and again (the
 * token lookup, the balance, the plain page); `name` must stand for one text only.
 */
export type PgDirect = { prepared<R>(name: string, query: CompiledQuery<R>): Promise<R[]> };
const pgDirect = new WeakMap<Db, PgDirect>();

export function pgDirectOf(db: Db): PgDirect | undefined {
  return pgDirect.get(db);
}

/** Runs `query` as the prepared statement `name` when `pg` is given (PostgreSQL's pool), else through Kysely. */
export async function runNamed<R>(db: Db, pg: PgDirect | undefined, name: string, query: CompiledQuery<R>): Promise<R[]> {
  return pg ? await pg.prepared(name, query) : ((await db.executeQuery(query)).rows as R[]);
}
/** A compiled query with other values for its parameters (same SQL, same result type). */
export function withParameters<R>(q: CompiledQuery<R>, parameters: readonly unknown[]): CompiledQuery<R> {
  return { ...q, parameters };
}

export type OpenedDb = { db: Db; dialect: Dialect; close(): Promise<void> };

export type OpenDbOptions =
  | {
      kind: "sqlite";
      path: string;
      synchronous?: "FULL" | "NORMAL";
      busyTimeoutMs?: number;
      /** Checkpoint the WAL into the database file after a commit leaves it this long (SQLite's default: 1000 pages). */
      checkpointPages?: number;
    }
  | {
      kind: "postgres";
      url: string;
      poolMax?: number;
      /** How long a query waits for a connection: a free one of the pool, or a new one to connect. */
      poolWaitMs?: number;
      schema?: string;
      statementTimeoutMs?: number;
    };

// int8 and numeric arrive as strings from pg; every amount we keep fits a safe integer, and we
// refuse silently losing precision if one ever did not.
function toSafeInteger(text: string): number {
  const n = Number(text);
  if (!Number.isSafeInteger(n)) throw new Error(`integer out of safe range from database: ${text}`);
  return n;
}
pg.types.setTypeParser(20, toSafeInteger);

/** The ledger's files hold what the mnemonic's file does (balances, bank details): readable by their owner only. */
const DB_FILE_MODE = 0o600;

/**
 * Creates the database file `0600` before SQLite opens it (SQLite gives its `-wal` and `-shm` files the
 * database file's mode), in a directory created `0700`; a file made by an older version is narrowed.
 */
function ownerOnly(path: string): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  closeSync(openSync(path, "a", DB_FILE_MODE));
  for (const f of [path, `${path}-wal`, `${path}-shm`]) if (existsSync(f)) chmodSync(f, DB_FILE_MODE);
}

export function openDb(options: OpenDbOptions): OpenedDb {
  if (options.kind === "sqlite") {
    if (options.path !== ":memory:") ownerOnly(options.path);
    const sqlite = new SQLite(options.path);
    sqlite.pragma("journal_mode = WAL");
    if (options.path !== ":memory:") for (const f of [`${options.path}-wal`, `${options.path}-shm`]) if (existsSync(f)) chmodSync(f, DB_FILE_MODE);
    sqlite.pragma(`synchronous = ${options.synchronous ?? "FULL"}`);
    sqlite.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5_000}`);
    sqlite.pragma(`wal_autocheckpoint = ${options.checkpointPages ?? 1_000}`);
    sqlite.pragma("foreign_keys = ON");
    // The evidence triggers hash each record in the write that makes it (evidence.ts); SQLite has no hash of its own.
    sqlite.function(SQLITE_SHA256_FUNCTION, { deterministic: true }, (text) => sqliteSha256(String(text)));
    // Savepoints keep the pages they change in a statement journal; in a temporary file (SQLite's
    // default) every group-commit savepoint cost a write to disk: 100 µs of statements per hold, 35
    // in memory. The journal holds only the pages of one write, so memory stays small.
    sqlite.pragma("temp_store = MEMORY");
    // Kysely prepares every statement on every call; with better-sqlite3 a prepared statement is
    // reusable, so keep the most recent ones (bounded): a quarter of a hot query's cost.
    const statements = new Map<string, SQLite.Statement>();
    const database = {
      close: () => sqlite.close(),
      prepare(text: string) {
        let st = statements.get(text);
        if (st) {
          statements.delete(text);
          statements.set(text, st);
          return st;
        }
        st = sqlite.prepare(text);
        if (statements.size >= STATEMENT_CACHE_MAX) statements.delete(statements.keys().next().value!);
        statements.set(text, st);
        return st;
      },
    };
    const db = new Kysely<Database>({ dialect: new SqliteDialect({ database }) });
    // FULL: the group commit's batches are made durable by a sync of the log off the event loop
    // (logSync.ts); with NORMAL the operator chose not to wait for the disk at all.
    const logSync = (options.synchronous ?? "FULL") === "FULL" && options.path !== ":memory:" ? createLogSync(`${options.path}-wal`) : undefined;
    sqliteDirect.set(db, {
      group: createGroupCommit(db, (text) => database.prepare(text), { busyTimeoutMs: options.busyTimeoutMs ?? 5_000, logSync }),
      read: <R>(query: CompiledQuery<R>) => (sqlite.inTransaction ? undefined : (database.prepare(query.sql).all(...(query.parameters as unknown[])) as R[])),
    });
    return {
      db,
      dialect: "sqlite",
      async close() {
        await db.destroy();
        logSync?.close();
      },
    };
  }
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolMax ?? 16,
    connectionTimeoutMillis: options.poolWaitMs ?? 10_000,
    idleTimeoutMillis: 30_000,
    statement_timeout: options.statementTimeoutMs ?? 30_000,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: answeredByCallback(pool) }) });
  pgDirect.set(db, { prepared: async (name, query) => (await pool.query({ name, text: query.sql, values: [...query.parameters] })).rows });
  return { db, dialect: "postgres", close: () => db.destroy() };
}

/**
 * The pool as Kysely sees it, each statement run through pg's callback API. pg's promise API (`Client#query`
 * without a callback, which Kysely calls) leaves every result reachable until the next full collection: in a loop
 * of 50-row reads, 30–40 % of the young generation survived each scavenge and a scavenge took 8–13 ms, against
 * 0.1 % and 0.3–0.7 ms through the callback API (and through `Pool#query`, which uses it). Those pauses made much
 * of the list pages' p99 (docs/performance.md).
 */
function answeredByCallback(pool: pg.Pool): PostgresPool {
  // One wrapper per connection, so Kysely keeps recognising a connection it has seen.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  const wrap = (client: pg.PoolClient): PostgresPoolClient => {
    const query = (sqlOrCursor: string | object, parameters?: readonly unknown[]) =>
      typeof sqlOrCursor === "string"
        ? new Promise((resolve, reject) => void client.query(sqlOrCursor, parameters as unknown[], (err: Error | undefined, result: unknown) => (err ? reject(err) : resolve(result))))
        : client.query(sqlOrCursor as never);
    return { query: query as PostgresPoolClient["query"], release: () => client.release() };
  };
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) wrappers.set(client, (wrapper = wrap(client)));
      return wrapper;
    },
    end: () => pool.end(),
  };
}
