/**
 * The return watch's state (migration 0019; rails/fiat/returnWatch.ts reads it): per off-ramp, the cursor of
 * its list of changed payouts and a lease, so one process of a deployment reads it at a time; the completed
 * bank payments still within the return window, oldest read first; and the refunds seen on-chain from an
 * off-ramp, which `reconcile` matches to payments. A Ledger's `returnWatch`.
 */
import type { Clock } from "../ids.ts";
import type { Db } from "./db.ts";
import type { ReturnWatchTable } from "./schema.ts";

export type ReturnWatchState = Pick<ReturnWatchTable, "cursor_ms" | "sweep_from">;
export type WatchedPayment = { id: string; provider_ref: string };
export type ProviderRefund = { chain: string; txHash: string; logIndex: number; projectId: string; fromAddress: string; amountMicros: number; blockNumber: number };
export type UnmatchedRefund = { chain: string; tx_hash: string; log_index: number; project_id: string; from_address: string; amount_micros: number; block_number: number; seen_at: string };

export class ReturnWatch {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  private now(): string {
    return this.clock().toISOString();
  }

  /**
   * Leases the watch of `provider` to `owner` for `leaseMs` (compare-and-set: one process at a time; its
   * own lease is renewed). Its state, or undefined while another process holds it.
   */
  async claim(provider: string, owner: string, leaseMs: number): Promise<ReturnWatchState | undefined> {
    const now = this.now();
    await this.db.insertInto("return_watch").values({ provider, cursor_ms: null, sweep_from: null, lease_owner: null, lease_until: null }).onConflict((oc) => oc.column("provider").doNothing()).execute();
    return this.db
      .updateTable("return_watch")
      .set({ lease_owner: owner, lease_until: new Date(this.clock().getTime() + leaseMs).toISOString() })
      .where("provider", "=", provider)
      .where((eb) => eb.or([eb("lease_owner", "is", null), eb("lease_owner", "=", owner), eb("lease_until", "<", now)]))
      .returning(["cursor_ms", "sweep_from"])
      .executeTakeFirst();
  }

  /** Stores how far the pass got and gives the lease up; nothing if the lease was lost meanwhile. */
  async release(provider: string, owner: string, state: ReturnWatchState): Promise<boolean> {
    const r = await this.db
      .updateTable("return_watch")
      .set({ ...state, lease_owner: null, lease_until: null })
      .where("provider", "=", provider)
      .where("lease_owner", "=", owner)
      .executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /**
   * Up to `limit` completed bank payments completed at or after `since` and not read since `before`,
   * least recently read first (the partial index of migration 0019 holds only those rows).
   */
  due(o: { since: string; before: string; limit: number }): Promise<WatchedPayment[]> {
    return this.db
      .selectFrom("payments")
      .select(["id", "provider_ref"])
      .where("rail", "=", "fiat")
      .where("status", "=", "completed")
      .where("completed_at", ">=", o.since)
      .where("provider_ref", "is not", null)
      .where((eb) => eb(eb.fn.coalesce("return_checked_at", "completed_at"), "<", o.before))
      .orderBy((eb) => eb.fn.coalesce("return_checked_at", "completed_at"))
      .limit(o.limit)
      .execute() as Promise<WatchedPayment[]>;
  }

  async markRead(ids: string[]): Promise<void> {
    if (ids.length) await this.db.updateTable("payments").set({ return_checked_at: this.now() }).where("id", "in", ids).execute();
  }

  /** The transaction by which the provider says it sent this payment's USDC back. */
  async noteRefundTx(paymentId: string, txHash: string): Promise<void> {
    await this.db.updateTable("payments").set({ refund_tx_hash: txHash.toLowerCase() }).where("id", "=", paymentId).execute();
  }

  /** A transfer from an off-ramp to a project wallet: kept to be matched, never credited. Idempotent. */
  async recordRefund(r: ProviderRefund): Promise<void> {
    await this.db
      .insertInto("provider_refunds")
      .values({ chain: r.chain, tx_hash: r.txHash.toLowerCase(), log_index: r.logIndex, project_id: r.projectId, from_address: r.fromAddress, amount_micros: r.amountMicros, block_number: r.blockNumber, seen_at: this.now() })
      .onConflict((oc) => oc.columns(["chain", "tx_hash", "log_index"]).doNothing())
      .execute();
  }

  /** Up to `limit` refunds seen on-chain that no payment of their project names as its provider's refund, oldest first. */
  unmatchedRefunds(limit: number): Promise<UnmatchedRefund[]> {
    return this.db
      .selectFrom("provider_refunds as r")
      .selectAll("r")
      .where((eb) =>
        eb.not(
          eb.exists(
            eb
              .selectFrom("payments as p")
              .select("p.id")
              .whereRef("p.refund_tx_hash", "=", "r.tx_hash")
              .whereRef("p.project_id", "=", "r.project_id")
              .where("p.status", "in", ["failed", "reversed"]),
          ),
        ),
      )
      .orderBy("r.seen_at")
      .limit(limit)
      .execute();
  }
}
