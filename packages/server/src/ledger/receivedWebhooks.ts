/**
 * Webhooks received (deposit notifications, the fiat provider's events): the ids of those seen, so a
 * replay is refused, forgotten once too old to pass the timestamp check. A Ledger's `receivedWebhooks`.
 */
import type { Clock } from "../ids.ts";
import type { Db } from "./db.ts";

export class ReceivedWebhooks {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
  ) {}

  /**
   * Forgets webhook ids received before `before`, at most `max` a call: a delivery that old fails the
   * 5-minute timestamp check anyway, so its id no longer needs remembering. Returns how many went.
   */
  async prune(before: string, max = 1_000): Promise<number> {
    const r = await this.db
      .deleteFrom("webhook_events")
      .where("id", "in", (eb) => eb.selectFrom("webhook_events").select("id").where("received_at", "<", before).limit(max))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }

  /** Records a webhook id; false when it was seen before (a replay). */
  async remember(id: string, source: string): Promise<boolean> {
    const r = await this.db.insertInto("webhook_events").values({ id, source, received_at: this.clock().toISOString() }).onConflict((oc) => oc.column("id").doNothing()).returning("id").executeTakeFirst();
    return r !== undefined;
  }
}
