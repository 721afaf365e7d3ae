/**
 * Deposits: on-chain transfers to a project's wallet, seen (shown as `pending`), then credited (a
 * `usdc_fund` transaction, pending → available) or dropped (a reorg took them away). A Ledger's `deposits`.
 */
import { type Transaction, sql } from "kysely";
import type { Clock, IdGenerator } from "../ids.ts";
import { account } from "./accounts.ts";
import type { Db } from "./db.ts";
import { writeJournal } from "./journal.ts";
import type { Database } from "./schema.ts";

export type DepositKey = { chain: string; txHash: string; logIndex: number };
export type SeenDeposit = DepositKey & {
  projectId: string;
  toAddress: string;
  fromAddress: string;
  amountMicros: number;
  blockNumber: number;
  blockHash: string;
};

export class Deposits {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly newId: IdGenerator,
  ) {}

  private now(): string {
    return this.clock().toISOString();
  }

  /**
   * Records an on-chain transfer seen but not yet confirmed: shows in `pending`. Idempotent. The id of
   * the `usdc_fund` transaction it becomes when credited is chosen now, so its deposit.pending webhook
   * names the transaction that deposit.credited later shows.
   */
  async recordSeen(d: SeenDeposit): Promise<boolean> {
    const at = this.now();
    return this.db.transaction().execute(async (trx) => {
      const inserted = await trx
        .insertInto("deposits")
        .values({ chain: d.chain, tx_hash: d.txHash, log_index: d.logIndex, project_id: d.projectId, to_address: d.toAddress, from_address: d.fromAddress, amount_micros: d.amountMicros, block_number: d.blockNumber, block_hash: d.blockHash, status: "seen", txn_id: this.newId("txn"), seen_at: at, credited_at: null })
        .onConflict((oc) => oc.columns(["chain", "tx_hash", "log_index"]).doNothing())
        .returning("tx_hash")
        .executeTakeFirst();
      if (!inserted) return false;
      await trx.updateTable("balances").set((eb) => ({ pending_micros: eb("pending_micros", "+", d.amountMicros) })).where("project_id", "=", d.projectId).execute();
      return true;
    });
  }

  /** Confirms a seen deposit: a `usdc_fund` transaction, pending → available. At most once per log. */
  async credit(key: DepositKey): Promise<boolean> {
    const at = this.now();
    return this.db.transaction().execute(async (trx) => {
      const d = await leaveSeen(trx, key, { status: "credited", txn_id: sql<string>`coalesce(txn_id, ${this.newId("txn")})` as never, credited_at: at });
      if (!d) return false;
      const txnId = d.txn_id!;
      const bumped = await trx
        .updateTable("balances")
        .set((eb) => ({
          pending_micros: eb("pending_micros", "-", d.amount_micros),
          available_micros: eb("available_micros", "+", d.amount_micros),
          total_funded_micros: eb("total_funded_micros", "+", d.amount_micros),
          tx_count: eb("tx_count", "+", 1),
        }))
        .where("project_id", "=", d.project_id)
        .returning("tx_count")
        .executeTakeFirstOrThrow();
      await trx.insertInto("transactions").values({ id: txnId, project_id: d.project_id, payment_id: null, type: "usdc_fund", status: "completed", amount: d.amount_micros, currency: "usdc", description: `USDC deposit from ${d.from_address}`, merchant_name: null, created_at: at, completed_at: at, pos: Number(bumped.tx_count) }).execute();
      await writeJournal(trx, this.newId, "deposit", [
        { account: account.chain, projectId: null, amountMicros: -d.amount_micros },
        { account: account.available(d.project_id), projectId: d.project_id, amountMicros: d.amount_micros },
      ], at);
      return true;
    });
  }

  /** A seen transfer that vanished before confirmation (reorg): no credit, pending released. */
  async drop(key: DepositKey): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const d = await leaveSeen(trx, key, { status: "dropped" });
      if (!d) return false;
      await trx.updateTable("balances").set((eb) => ({ pending_micros: eb("pending_micros", "-", d.amount_micros) })).where("project_id", "=", d.project_id).execute();
      return true;
    });
  }

  /** Deposits still `seen` on `chain`, lowest block first, at most `max`. */
  seen(chain: string, max: number) {
    return this.db.selectFrom("deposits").selectAll().where("chain", "=", chain).where("status", "=", "seen").orderBy("block_number").limit(max).execute();
  }

  /** The status of the deposit made by transaction `txHash` (seen, credited, dropped), or undefined. */
  async statusOf(txHash: string): Promise<string | undefined> {
    return (await this.db.selectFrom("deposits").select("status").where("tx_hash", "=", txHash).executeTakeFirst())?.status;
  }
}

/** Moves a deposit out of `seen` (to credited or dropped), once: the row, or undefined if it had left. */
function leaveSeen(trx: Transaction<Database>, key: DepositKey, patch: Partial<Database["deposits"]>) {
  return trx
    .updateTable("deposits")
    .set(patch)
    .where("chain", "=", key.chain)
    .where("tx_hash", "=", key.txHash)
    .where("log_index", "=", key.logIndex)
    .where("status", "=", "seen")
    .returningAll()
    .executeTakeFirst();
}

