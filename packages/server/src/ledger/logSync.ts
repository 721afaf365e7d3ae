/**
 * Makes committed SQLite transactions durable off the event loop. A group commit (groupCommit.ts)
 * commits its batch with `synchronous=NORMAL`, so SQLite writes the batch's frames to the
 * write-ahead log without waiting for the disk, then asks for `afterCommit()` and answers its callers
 * only once that resolves: an `fdatasync` of the log, run in libuv's thread pool, that started after
 * the commit. That is the durability `synchronous=FULL` gives (SQLite's own commit-time sync of the
 * log, and nothing more, with the default power-safe overwrite), without blocking the thread on the
 * disk: the next batch runs while this one's sync is under way, and one sync covers every commit
 * made before it started. A commit made while a sync is under way starts a second one at once
 * rather than waiting for the first to end and then for its own (SYNCS_IN_FLIGHT_MAX).
 *
 * Why it is sound: a WAL transaction is recovered after a power loss if and only if its frames,
 * commit frame included, reached the disk with valid checksums; recovery stops at the first frame
 * that does not check, so nothing is half-applied. SQLite still syncs the log's header when the log
 * restarts (its CKPT flags, NORMAL included) and the log before and the database after each
 * checkpoint. A commit is visible to other connections before its sync ends; everything that acts
 * outside the database on a row (signing, broadcasting) first waits for a write of its own to be
 * answered, and that write's sync covers every frame before it (decisions.md, "Commits made durable
 * off the event loop").
 *
 * A failed `fdatasync` leaves the log's durability unknown (Linux may drop the dirty pages and report
 * success next time), so it is final: every waiting and later `afterCommit()` fails with it.
 */
import { closeSync, fdatasync, openSync } from "node:fs";

export type LogSync = {
  /** Resolves once a sync of the log that started after this call has finished. */
  afterCommit(): Promise<void>;
  close(): void;
  /** How many syncs ran (metrics, tests). */
  readonly syncs: number;
};

export type LogSyncOptions = {
  /** The sync itself (tests hold it to observe what waits for it). Default: `fs.fdatasync`. */
  sync?: (fd: number, done: (err: NodeJS.ErrnoException | null) => void) => void;
};

type Waiter = { resolve(): void; reject(err: unknown): void };

/**
 * Syncs of one log under way at once. Two cut the wait of a commit made during a sync from the rest
 * of that sync plus a whole one to about one (pay benchmark: 2.5–2.9 ms instead of 4.0–4.3 ms per
 * hold); four did no better, and each one takes a thread of libuv's pool (four by default, shared
 * with DNS lookups and file work).
 */
export const SYNCS_IN_FLIGHT_MAX = 2;

export function createLogSync(logPath: string, opts: LogSyncOptions = {}): LogSync {
  const sync = opts.sync ?? fdatasync;
  let fd: number | undefined;
  let waiting: Waiter[] = [];
  /** Syncs under way. */
  let syncing = 0;
  let failure: Error | undefined;
  let syncs = 0;

  /**
   * The log's descriptor, opened at the first sync. The file stays the same while the group commit's
   * connection is open: SQLite removes (or replaces) the log only when the last connection to the
   * database closes, or when it leaves WAL mode, which needs every other connection gone.
   */
  function logFd(): number {
    fd ??= openSync(logPath, "r");
    return fd;
  }

  function start(): void {
    syncing++;
    const batch = waiting;
    waiting = [];
    const finish = (err: unknown) => {
      syncing--;
      syncs++;
      if (err) failure ??= new Error(`the database log could not be made durable (${(err as Error).message ?? err}); the ledger refuses the writes it batches until the service restarts`, { cause: err });
      for (const w of batch) failure ? w.reject(failure) : w.resolve();
      if (failure) for (const w of waiting.splice(0)) w.reject(failure);
      else if (waiting.length && syncing < SYNCS_IN_FLIGHT_MAX) start();
    };
    try {
      sync(logFd(), finish);
    } catch (err) {
      finish(err);
    }
  }

  return {
    afterCommit() {
      return new Promise((resolve, reject) => {
        if (failure) return reject(failure);
        waiting.push({ resolve, reject });
        if (syncing < SYNCS_IN_FLIGHT_MAX) start();
      });
    },
    close() {
      if (fd !== undefined) closeSync(fd);
      fd = undefined;
    },
    get syncs() {
      return syncs;
    },
  };
}
