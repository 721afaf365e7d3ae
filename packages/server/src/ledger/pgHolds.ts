/**
 * Holds on PostgreSQL. A hold updates its project's balance row, and PostgreSQL keeps that row locked
 * until the hold's commit is flushed to disk; so the holds of one busy project follow one another, one
 * statement and one WAL flush each (sampled under load: holds waiting on the row's lock, behind the
 * one before them). Holds of one project asked for together (in one turn of the event loop when holds
 * are frequent, at once when the path is quiet: batching.ts) therefore go in one call of
 * `aw_hold_batch` (pgFunctions.ts): the row is locked once, each hold judged in turn against what the
 * ones before it left, and one commit makes them all durable. While a project's call runs, its next
 * holds wait and go in the next one.
 *
 * A hold alone is the same call with one hold. If a batch fails (a duplicate idempotency key fails the
 * whole call), nothing of it happened and each hold runs again alone, so every failure stays its own
 * hold's. A call locks one balance row, so two of them cannot deadlock; it locks the balance row before
 * inserting the payments, as resolutions lock balance rows before payments (pgResolves.ts).
 */
import { CompiledQuery, type Insertable } from "kysely";
import type { Db } from "./db.ts";
import { scheduleFlush } from "./batching.ts";
import type { Database, PaymentsTable } from "./schema.ts";

/** One hold's rows: every column of each. Every hold has two transactions (fee, rail) and a two-entry movement. */
export type PgHold = {
  totalMicros: number;
  payment: PaymentsTable;
  transactions: Omit<Insertable<Database["transactions"]>, "pos">[];
  journal: Insertable<Database["journal_entries"]>[];
};
/** Held, or not: the balance was short (what was available to the hold when it was judged). */
export type PgHoldOutcome = { held: true } | { held: false; availableMicros: number };

export type PgHolds = { hold(projectId: string, h: PgHold): Promise<PgHoldOutcome> };

/** At most this many holds in one call. */
const BATCH_MAX = 64;

type Item = { h: PgHold; resolve(o: PgHoldOutcome): void; reject(err: unknown): void };

export function createPgHolds(db: Db): PgHolds {
  const waiting = new Map<string, Item[]>();
  /** Projects with a call under way. */
  const running = new Set<string>();
  let scheduled = false;
  let lastFlushAt = Number.NEGATIVE_INFINITY;

  /** The holds' outcomes, in order; throws if the call fails (then none of them happened). */
  async function judge(projectId: string, holds: PgHold[]): Promise<PgHoldOutcome[]> {
    const json = JSON.stringify(holds.map((h) => ({ total: h.totalMicros, payment: h.payment, transactions: h.transactions, journal: h.journal })));
    const query = CompiledQuery.raw(`select "held", "available_after" from aw_hold_batch($1::text, $2::jsonb) order by "hold_index"`, [projectId, json]);
    const rows = (await db.executeQuery(query)).rows as { held: boolean; available_after: number }[];
    // Invariant: one row per hold, in order.
    if (rows.length !== holds.length) throw new Error(`aw_hold_batch answered ${rows.length} rows for ${holds.length} holds`);
    return rows.map((r) => (r.held ? { held: true } : { held: false, availableMicros: Number(r.available_after) }));
  }

  async function run(projectId: string, items: Item[]): Promise<void> {
    let outcomes: PgHoldOutcome[];
    try {
      outcomes = await judge(projectId, items.map((i) => i.h));
    } catch (err) {
      if (items.length === 1) return items[0]!.reject(err);
      // The call failed whole, so none of it happened: each hold again, alone, with its own outcome.
      return void (await Promise.all(items.map((i) => judge(projectId, [i.h]).then((o) => i.resolve(o[0]!), i.reject))));
    }
    items.forEach((item, n) => item.resolve(outcomes[n]!));
  }

  /** Starts the project's next call with what waits for it; when it ends, the next one. */
  function start(projectId: string): void {
    const items = waiting.get(projectId);
    if (!items || running.has(projectId)) return;
    const batch = items.splice(0, BATCH_MAX);
    if (items.length === 0) waiting.delete(projectId);
    running.add(projectId);
    void run(projectId, batch)
      .catch((err) => batch.forEach((i) => i.reject(err)))
      .finally(() => {
        running.delete(projectId);
        start(projectId);
      });
  }

  function flush(): void {
    lastFlushAt = performance.now();
    scheduled = false;
    for (const projectId of [...waiting.keys()]) start(projectId);
  }

  return {
    hold(projectId, h) {
      // Invariant of the positions aw_hold_batch gives: two transactions a hold.
      if (h.transactions.length !== 2) throw new Error(`a hold has ${h.transactions.length} transactions, not 2`);
      return new Promise((resolve, reject) => {
        let items = waiting.get(projectId);
        if (!items) waiting.set(projectId, (items = []));
        items.push({ h, resolve, reject });
        if (!scheduled) {
          scheduled = true;
          scheduleFlush(lastFlushAt, flush);
        }
      });
    },
  };
}
