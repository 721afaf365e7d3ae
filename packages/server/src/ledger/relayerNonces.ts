/**
 * The relayer's nonces: its counter (a `kv` row per relayer address), and the transactions it signed
 * with each nonce, kept for re-broadcast (`relayer_txs`). A Ledger's `relayerNonces`. A transaction's signed
 * bytes are forgotten once no authorization it carries can still move money (`forgetSignedBytes`); its row
 * (nonce, hash, first payment) stays.
 */
import type { Db } from "./db.ts";
import type { AtomicWrites, Steps } from "./atomicWrites.ts";
import { toRowPatch } from "./paymentRows.ts";
import type { Payment, PaymentPatch } from "../domain/payment.ts";

/** What the relayer stores in one write (`RelayerNonces.store`): plain data, so any thread's ledger can run it. */
export type RelayerStore = {
  /** The `kv` row of the relayer's nonce counter. */
  counterKey: string;
  relayer: string;
  tx: { nonce: number; hash: string; raw: string };
  /** Each payment the transaction carries: what changes, if the payment still holds `expected`. */
  members: { paymentId: string; patch: PaymentPatch; expected: Pick<Payment, "txHash" | "railState"> }[];
  at: string;
};
export type RelayerStoreResult = { kind: "stored" } | { kind: "nonce_taken" } | { kind: "stale"; paymentId: string };

/** What `raw_tx` holds once forgotten (the column is NOT NULL; no signed transaction is empty). */
const FORGOTTEN = "";
const signedBytes = (raw: string): string | null => (raw === FORGOTTEN ? null : raw);

class StaleMember extends Error {
  constructor(readonly paymentId: string) {
    super(`payment ${paymentId} was advanced by another process`);
  }
}

export class RelayerNonces {
  constructor(
    private readonly db: Db,
    private readonly writes: AtomicWrites,
  ) {}

  /**
   * Brings the relayer's nonce counter (the `kv` row `counterKey`) up to `onChain`, never down: created
   * there if missing, else moved only if it stands below, so a concurrent allocation in another process
   * is never moved backwards.
   */
  async raiseCounter(counterKey: string, onChain: number): Promise<void> {
    await this.db.insertInto("kv").values({ key: counterKey, value: String(onChain) }).onConflict((oc) => oc.column("key").doNothing()).execute();
    await this.db
      .updateTable("kv")
      .set({ value: String(onChain) })
      .where("key", "=", counterKey)
      .where((eb) => eb(eb.cast("value", "integer"), "<", onChain))
      .execute();
  }

  /** The next nonce the relayer's counter would give (the counter row is created at 0 if missing). */
  async counter(counterKey: string): Promise<number> {
    const read = () => this.db.selectFrom("kv").select("value").where("key", "=", counterKey).executeTakeFirst();
    let row = await read();
    if (!row) {
      await this.db.insertInto("kv").values({ key: counterKey, value: "0" }).onConflict((oc) => oc.column("key").doNothing()).execute();
      row = await read();
    }
    return Number(row!.value);
  }

  /** The transaction the relayer signed with `nonce`, kept for re-broadcast (`raw_tx` null once forgotten), or undefined. */
  async transactionAt(relayer: string, nonce: number): Promise<{ tx_hash: string; raw_tx: string | null; created_at: string } | undefined> {
    const row = await this.db.selectFrom("relayer_txs").select(["tx_hash", "raw_tx", "created_at"]).where("relayer", "=", relayer).where("nonce", "=", nonce).executeTakeFirst();
    return row && { ...row, raw_tx: signedBytes(row.raw_tx) };
  }

  /** A relayer transaction by its hash: the signed bytes (null once forgotten) and the nonce, or undefined. */
  async transactionByHash(txHash: string): Promise<{ raw_tx: string | null; nonce: number } | undefined> {
    const row = await this.db.selectFrom("relayer_txs").select(["raw_tx", "nonce"]).where("tx_hash", "=", txHash).executeTakeFirst();
    return row && { raw_tx: signedBytes(row.raw_tx), nonce: Number(row.nonce) };
  }

  /**
   * Forgets the signed bytes of at most `max` transactions stored before `before` (ISO), oldest first; how many. Only
   * for transactions none of whose authorizations can still be valid (decisions.md, "Signed relayer transactions are
   * forgotten"): the chain has each one that was mined, and one that was not can only be replaced by a no-op.
   */
  async forgetSignedBytes(before: string, max: number): Promise<number> {
    // Bounded by the `max`-th oldest such row's time, so that both the bound and the update read only the kept rows'
    // index (migration 0043); a join on the `max` rows' keys read the whole table on PostgreSQL. Rows stored in the
    // same millisecond as that one go with it.
    const r = await this.db
      .updateTable("relayer_txs")
      .set({ raw_tx: FORGOTTEN })
      .where("raw_tx", "<>", FORGOTTEN)
      .where("created_at", "<", before)
      .where("created_at", "<=", (eb) =>
        eb.fn.coalesce(eb.selectFrom("relayer_txs").select("created_at").where("raw_tx", "<>", FORGOTTEN).where("created_at", "<", before).orderBy("created_at").limit(1).offset(max - 1), eb.val(before)),
      )
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /**
   * Stores a signed relayer transaction in one atomic write: the nonce counter moves past its nonce
   * only if it still stood there (else `nonce_taken`: another process signed with it first), the
   * signed transaction is kept for re-broadcast, and each member payment gets its new state, by
   * compare-and-set on what the relayer read (else `stale`, naming the member; nothing is stored).
   */
  async store(input: RelayerStore): Promise<RelayerStoreResult> {
    const db = this.db;
    const { tx, at } = input;
    try {
      return await this.writes.atomically(function* (): Steps<RelayerStoreResult> {
        const moved = yield db.updateTable("kv").set({ value: String(tx.nonce + 1) }).where("key", "=", input.counterKey).where("value", "=", String(tx.nonce)).returning("value").compile();
        if (moved.length !== 1) return { kind: "nonce_taken" };
        // payment_id: the first payment of the batch; every member's row carries the hash.
        yield db.insertInto("relayer_txs").values({ nonce: tx.nonce, relayer: input.relayer, payment_id: input.members[0]!.paymentId, raw_tx: tx.raw, tx_hash: tx.hash, created_at: at }).compile();
        for (const m of input.members) {
          const updated = yield db
            .updateTable("payments")
            .set({ ...toRowPatch(m.patch), updated_at: at })
            .where("id", "=", m.paymentId)
            .where("tx_hash", m.expected.txHash === null ? "is" : "=", m.expected.txHash)
            .where("rail_state", m.expected.railState === null ? "is" : "=", m.expected.railState)
            .returning("id")
            .compile();
          // Thrown so the whole write rolls back (the nonce too); answered as a value below.
          if (updated.length !== 1) throw new StaleMember(m.paymentId);
        }
        // One statement for every member's transactions: PostgreSQL's counters are kept by a statement trigger.
        const ids = input.members.map((m) => m.paymentId);
        yield db.updateTable("transactions").set({ status: "processing" }).where("payment_id", "in", ids).where("status", "=", "pending").compile();
        return { kind: "stored" };
      });
    } catch (err) {
      if (err instanceof StaleMember) return { kind: "stale", paymentId: err.paymentId };
      throw err;
    }
  }
}
