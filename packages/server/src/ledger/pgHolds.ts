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
import { createCallBatcher } from "./batching.ts";
import type { Database, PaymentsTable } from "./schema.ts";

/** One hold's rows: every column of each. Every hold has two transactions (fee, rail) and a two-entry movement. */
export type PgHold = {
  totalMicros: number;
  /**
   * The payment amount, the limited windows it must fit (spending.ts; none: no limits), each with the
   * token it counts (null: the whole project) and its bounds of `created_at`, and every counter of the
   * payment's windows it is added to where one exists (`countedWindows`).
   */
  amountMicros: number;
  windows: { scope_id: string; kind: string; start: string; limit: number; token_id: string | null; from: string; to: string }[];
  counted: [string, string, string][];
  payment: PaymentsTable;
  transactions: Omit<Insertable<Database["transactions"]>, "pos">[];
  journal: Insertable<Database["journal_entries"]>[];
};
/**
 * Held, or not: the balance was short (what was available to the hold when it was judged), or a
 * spending window was (its index in the hold's windows, and what was spent in it).
 */
export type PgHoldOutcome = { held: true } | { held: false; availableMicros: number } | { held: false; windowIndex: number; spentMicros: number };

export type PgHolds = { hold(projectId: string, h: PgHold): Promise<PgHoldOutcome> };

/** At most this many holds in one call. */
const BATCH_MAX = 64;

export function createPgHolds(db: Db): PgHolds {
  /** The holds' outcomes, in order; throws if the call fails (then none of them happened). */
  async function judge(projectId: string, holds: PgHold[]): Promise<PgHoldOutcome[]> {
    const json = JSON.stringify(holds.map((h) => ({ total: h.totalMicros, amount: h.amountMicros, windows: h.windows, counted: h.counted, payment: h.payment, transactions: h.transactions, journal: h.journal })));
    const query = CompiledQuery.raw(`select "held", "available_after", "refused_window", "window_spent" from aw_hold_batch($1::text, $2::jsonb) order by "hold_index"`, [projectId, json]);
    const rows = (await db.executeQuery(query)).rows as { held: boolean; available_after: number; refused_window: number | null; window_spent: number | null }[];
    // Invariant: one row per hold, in order.
    if (rows.length !== holds.length) throw new Error(`aw_hold_batch answered ${rows.length} rows for ${holds.length} holds`);
    return rows.map((r): PgHoldOutcome => {
      if (r.held) return { held: true };
      if (r.refused_window !== null) return { held: false, windowIndex: Number(r.refused_window) - 1, spentMicros: Number(r.window_spent) };
      return { held: false, availableMicros: Number(r.available_after) };
    });
  }
  // One call in flight per project; the projects' calls run side by side.
  const batched = createCallBatcher(judge, BATCH_MAX);

  return {
    hold(projectId, h) {
      // Invariant of the positions aw_hold_batch gives: two transactions a hold.
      if (h.transactions.length !== 2) throw new Error(`a hold has ${h.transactions.length} transactions, not 2`);
      return batched(projectId, h);
    },
  };
}
