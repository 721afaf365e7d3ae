/**
 * Reads of the deployment's health, as plain values, for the metrics an operator alerts on and for
 * `agentwallet doctor` (inspect.ts): the oldest open payment per rail, the webhook backlog, payments the
 * relayer sent lately. Nothing here writes. A Ledger's `health`.
 */
import type { Db } from "./db.ts";

/** The rails whose payments the relayer sends on-chain (and pays the gas of). */
const RELAYER_RAILS = ["usdc_transfer", "fiat"] as const;

function relayerPaymentsSince(db: Db, since: Date): Promise<number> {
  return db
    .selectFrom("payments")
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .where("rail", "in", RELAYER_RAILS)
    .where("created_at", ">=", since.toISOString())
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

/** The oldest payment not yet final, per rail: its creation time (ISO), for the rails that have one. */
export type OldestOpenPayment = { rail: string; created_at: string };

/** Health reads of a ledger that is open, for the metrics (a Ledger's `health`). */
export class HealthReads {
  constructor(private readonly db: Db) {}

  /** Per rail, the creation time of its oldest pending or processing payment. */
  oldestOpenPayments(): Promise<OldestOpenPayment[]> {
    return this.db
      .selectFrom("payments")
      .select(["rail", (eb) => eb.fn.min<string>("created_at").as("created_at")])
      .where("status", "in", ["pending", "processing"])
      .groupBy("rail")
      .execute();
  }

  /** Deliveries to clients not yet delivered nor given up, and when the oldest one's event happened. */
  async webhookBacklog(): Promise<{ undelivered: number; oldest_occurred_at: string | null }> {
    const r = await this.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_outbox as o", "o.id", "d.event_id")
      .select((eb) => [eb.fn.countAll<number | string>().as("n"), eb.fn.min<string>("o.occurred_at").as("oldest")])
      .where("d.state", "=", "pending")
      .executeTakeFirstOrThrow();
    return { undelivered: Number(r.n), oldest_occurred_at: r.oldest ?? null };
  }

  /** Payments the relayer sent since then (USDC transfers and bank payments). */
  relayerPaymentsSince(since: Date): Promise<number> {
    return relayerPaymentsSince(this.db, since);
  }
}
