/**
 * Resolutions (post or void) on PostgreSQL. Each one updates its project's balance row, which stays
 * locked until its commit is flushed; settlement resolves the payments of a relayer transaction
 * together (up to 32 at once when its receipt comes), and one after another, in transactions of six
 * round trips each, they held a busy project's row for most of a burst while its holds waited (sampled:
 * resolutions queued on the row's lock). Resolutions asked for together (one turn of the event loop
 * when they are frequent, at once when the path is quiet: batching.ts) therefore go in one call of
 * `aw_resolve_batch` (pgFunctions.ts): one round trip, the balance rows locked once (in project order,
 * before any payment row, as holds lock them), each payment leaving pending/processing at most once.
 * One call runs at a time per ledger. If a call fails, nothing of it happened and each resolution runs
 * again alone.
 */
import { CompiledQuery } from "kysely";
import type { Db } from "./db.ts";
import { createCallBatcher } from "./batching.ts";
import type { PaymentsTable } from "./schema.ts";

export type PgResolve = {
  id: string;
  outcome: "completed" | "failed";
  /** When it is resolved (`updated_at`, `completed_at`, the journal's `created_at`). */
  at: string;
  /** The journal movement's id. */
  movementId: string;
  txHash?: string | null;
  failureReason?: string | null;
  failureCode?: string | null;
  responseJson?: string | null;
  railState?: string;
};
/** Changed: the payment as it is now. Not changed: it was not pending or processing (or does not exist). */
export type PgResolveOutcome = { changed: true; payment: PaymentsTable } | { changed: false };

export type PgResolves = { resolve(r: PgResolve): Promise<PgResolveOutcome> };

/** At most this many resolutions in one call. */
const BATCH_MAX = 64;

export function createPgResolves(db: Db): PgResolves {
  /** The resolutions' outcomes, in order; throws if the call fails (then none of them happened). */
  async function apply(items: PgResolve[]): Promise<PgResolveOutcome[]> {
    const json = JSON.stringify(
      items.map((r) => ({
        id: r.id,
        outcome: r.outcome,
        at: r.at,
        movement_id: r.movementId,
        // As alone: a hash replaces the stored one only if there is one; a reason or response, if given (null included).
        set_tx_hash: Boolean(r.txHash),
        tx_hash: r.txHash || null,
        set_failure_reason: r.failureReason !== undefined,
        failure_reason: r.failureReason ?? null,
        set_failure_code: r.failureCode !== undefined,
        failure_code: r.failureCode ?? null,
        set_response_json: r.responseJson !== undefined,
        response_json: r.responseJson ?? null,
        set_rail_state: r.railState !== undefined,
        rail_state: r.railState ?? null,
      })),
    );
    const query = CompiledQuery.raw(`select "item_index", "payment" from aw_resolve_batch($1::jsonb)`, [json]);
    const rows = (await db.executeQuery(query)).rows as { item_index: number; payment: PaymentsTable }[];
    const changed = new Map(rows.map((row) => [Number(row.item_index), row.payment]));
    return items.map((_, n) => {
      const payment = changed.get(n + 1);
      return payment ? { changed: true, payment } : { changed: false };
    });
  }

  // One key: one call in flight for the whole ledger.
  const batched = createCallBatcher((_: null, items: PgResolve[]) => apply(items), BATCH_MAX);
  return { resolve: (r) => batched(null, r) };
}
