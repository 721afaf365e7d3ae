/**
 * Group commit for SQLite: ledger writes submitted together (during one turn of the event loop when
 * writes are frequent, at once when the path is quiet: batching.ts) run in one database transaction,
 * each inside its own savepoint, and share one commit. A write that throws rolls back its own
 * savepoint only; the others commit. No caller hears of its write before it is durable.
 *
 * Durable, with `synchronous=FULL`: the batch commits with NORMAL (SQLite writes the log without
 * waiting for the disk) and its callers are answered once an `fdatasync` of the log, started after
 * the commit and run off the event loop, has finished (logSync.ts). The write lock is released at the
 * commit, and the next batch runs while this one's sync is under way.
 *
 * A write asked for with `durable: false` is answered at the batch's commit instead, without waiting for that sync:
 * only writes whose loss in a crash of the machine leaves nothing anyone relies on (atomicWrites.ts says which). The
 * log is append-only, so any later sync makes it durable with the rest.
 *
 * Each write is a synchronous function over compiled queries, so nothing else runs on the connection
 * while the batch is open; the batch takes Kysely's connection (its mutex) first, so it never lands
 * inside a transaction Kysely has open across an `await`.
 */
import type SQLite from "better-sqlite3";
import type { CompiledQuery, Kysely } from "kysely";
import { QUIET_MS, scheduleFlush } from "./batching.ts";
import type { LogSync } from "./logSync.ts";

/** Runs one compiled query on the batch's connection; returns its rows (empty for a plain write). */
export type RunQuery = <R>(query: CompiledQuery<R>) => R[];

export type GroupCommit = {
  /** Runs `write` in the next batch; resolves with its result once the batch is durable (with `durable: false`, once it is committed). */
  write<T>(write: (run: RunQuery) => T, opts?: { durable?: boolean }): Promise<T>;
};

/** At most this many writes share a commit; more wait for the next batch. */
const BATCH_MAX = 256;

type Item = { write: (run: RunQuery) => unknown; durable: boolean; resolve: (v: unknown) => void; reject: (e: unknown) => void };
type Outcome = { ok: true; value: unknown } | { ok: false; error: unknown };
const answer = (item: Item, o: Outcome) => (o.ok ? item.resolve(o.value) : item.reject(o.error));

/** While another connection writes, the batch tries again this often (the event loop serves requests meanwhile). */
const LOCK_RETRY_MS = 1;

export type GroupCommitOptions = {
  /** See batching.ts. */
  quietMs?: number;
  /** The connection's `busy_timeout`: how long a batch waits for another connection's write before it fails. */
  busyTimeoutMs?: number;
  /**
   * The connection runs with `synchronous=FULL` and its batches are made durable by this sync of the
   * log instead of SQLite's own at commit. Without it, a batch is answered at its commit (durable
   * as the connection's `synchronous` makes it).
   */
  logSync?: LogSync;
};

export function createGroupCommit<DB>(db: Kysely<DB>, statement: (sql: string) => SQLite.Statement, opts: GroupCommitOptions = {}): GroupCommit {
  const quietMs = opts.quietMs ?? QUIET_MS;
  const busyTimeoutMs = opts.busyTimeoutMs ?? 5_000;
  const logSync = opts.logSync;
  let queue: Item[] = [];
  let scheduled = false;
  let lastFlushAt = Number.NEGATIVE_INFINITY;
  /** When the current batch first found the database locked by another connection (`performance.now()`). */
  let lockedSince: number | undefined;

  const run: RunQuery = <R>(query: CompiledQuery<R>): R[] => {
    const st = statement(query.sql);
    const parameters = query.parameters as unknown[];
    if (st.reader) return st.all(...parameters) as R[];
    st.run(...parameters);
    return [];
  };

  /**
   * Takes the write lock without waiting; answers SQLite's busy error while another connection
   * (another process, or the settlement thread) holds it. SQLite's own wait would block the event
   * loop in sleeps of 1, 2, 5 … ms; instead the batch is tried again on a timer, and the writes that
   * arrive meanwhile join it.
   */
  function tryBegin(): Error | undefined {
    // Outside a transaction, as SQLite requires; set back to FULL once the batch has ended (`end`).
    if (logSync) statement("pragma synchronous = NORMAL").run();
    statement("pragma busy_timeout = 0").get();
    try {
      statement("begin immediate").run();
      return undefined;
    } catch (err) {
      end();
      if ((err as { code?: string }).code === "SQLITE_BUSY") return err as Error;
      throw err;
    } finally {
      statement(`pragma busy_timeout = ${busyTimeoutMs}`).get();
    }
  }

  /** After a batch (committed, rolled back or never begun): every other write on the connection syncs at its commit again. */
  function end(): void {
    if (logSync) statement("pragma synchronous = FULL").run();
  }

  /** The next batch: the oldest waiting writes, up to the maximum. */
  const take = (): Item[] => queue.splice(0, BATCH_MAX);

  function schedule(): void {
    if (scheduled || queue.length === 0) return;
    scheduled = true;
    scheduleFlush(lastFlushAt, () => void flush(), quietMs);
  }

  async function flush(): Promise<void> {
    lastFlushAt = performance.now();
    let batch: Item[] = [];
    const outcomes: Outcome[] = [];
    let locked = false;
    let durable: Promise<void> | undefined;
    try {
      await db.connection().execute(async () => {
        const busy = tryBegin();
        if (busy) {
          lockedSince ??= performance.now();
          if (performance.now() - lockedSince < busyTimeoutMs) return void (locked = true);
          // As SQLite would after its busy timeout: the waiting writes fail, none is half-done.
          throw busy;
        }
        lockedSince = undefined;
        batch = take();
        try {
          for (const item of batch) {
            statement("savepoint w").run();
            try {
              outcomes.push({ ok: true, value: item.write(run) });
              statement("release w").run();
            } catch (error) {
              statement("rollback to w").run();
              statement("release w").run();
              outcomes.push({ ok: false, error });
            }
          }
          statement("commit").run();
        } catch (err) {
          // Nothing of this batch is durable; make sure the connection is left outside a transaction.
          try {
            statement("rollback").run();
          } catch {
            /* no transaction open */
          }
          throw err;
        } finally {
          end();
        }
      });
      // The next batch may run from here on; this one's callers wait for the log to be on disk, but those that asked
      // only for the commit.
      batch.forEach((item, i) => void (item.durable || answer(item, outcomes[i]!)));
      if (logSync && batch.some((item) => item.durable)) durable = logSync.afterCommit();
    } catch (err) {
      lockedSince = undefined;
      if (batch.length === 0) batch = take();
      for (const item of batch) item.reject(err);
      return;
    } finally {
      if (locked) setTimeout(() => void flush(), LOCK_RETRY_MS);
      else {
        scheduled = false;
        schedule();
      }
    }
    try {
      await durable;
    } catch (err) {
      // Committed, but not known to be on disk: no caller that waits for the disk may count on it (logSync.ts).
      for (const item of batch) if (item.durable) item.reject(err);
      return;
    }
    batch.forEach((item, i) => void (item.durable && answer(item, outcomes[i]!)));
  }

  return {
    write<T>(write: (run: RunQuery) => T, opts: { durable?: boolean } = {}): Promise<T> {
      return new Promise<T>((resolve, reject) => {
        queue.push({ write, durable: opts.durable ?? true, resolve: resolve as (v: unknown) => void, reject });
        schedule();
      });
    },
  };
}
