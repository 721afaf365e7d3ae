/**
 * Idempotency keys not yet owned by a payment row. A payment row owns its key (the unique index on
 * `payments(project_id, idempotency_key)`); before the hold writes that row, a rail whose price is known
 * only after a request to the recipient (x402) claims the key here, so repeats of the key do not each
 * request the recipient. A key ends in one of three ways: the hold writes the payment (the claim goes),
 * the recipient asked for nothing (its free reply is kept under the key until it expires), or the
 * request was refused (the claim goes: a repeat is a new attempt).
 *
 * One row per (project, key): `state` is `running` (a request holds the key until `until`, identified by
 * `token`) or `reply` (the free reply, kept until `until`). Taken with an insert that only one request
 * can win; a claim whose request died is taken over once `until` passed.
 */
import type { Kysely } from "kysely";
import type { AtomicWrites } from "./atomicWrites.ts";
import type { Database } from "./schema.ts";

type KeyState = { state: "running"; until: string; token: string } | { state: "reply"; until: string; replyJson: string };

export type ClaimOutcome = { kind: "claimed" } | { kind: "reply"; replyJson: string } | { kind: "running" };

/** Two racing takeovers of a dead claim: one wins, the other sees a running claim on its next look. */
const CLAIM_ATTEMPTS_MAX = 3;

/**
 * Each write is one statement through the ledger's writes (atomicWrites.ts): on SQLite it joins the group commit, whose
 * sync runs off the event loop and which waits for another connection's write lock on a timer. A plain statement there
 * synced on the event loop, and while the settlement thread held the lock it slept in SQLite's busy handler, every other
 * request of the process waiting with it.
 *
 * A claim and its release are answered at their commit, not after the log's sync: lost in a crash of the machine, a
 * claim only ever kept a request that died with it from being repeated (no money moves before the hold, whose own sync
 * covers the claim's commit), and a lost release leaves a claim that ends with its lease. A kept reply waits for the
 * disk: repeats of its key count on it.
 */
const ANSWERED_AT_COMMIT = { durable: false };
export class IdempotencyKeys {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly writes: AtomicWrites,
  ) {}

  /** Claims the key for the request `token` until `until`, unless a live claim or a kept reply holds it. */
  async claim(projectId: string, key: string, token: string, until: string, now: string): Promise<ClaimOutcome> {
    const mine = { project_id: projectId, key, state: "running" as const, token, until, reply_json: null };
    for (let attempt = 0; attempt < CLAIM_ATTEMPTS_MAX; attempt++) {
      const [inserted] = await this.writes.writeOne(this.db.insertInto("idempotency_keys").values(mine).onConflict((oc) => oc.columns(["project_id", "key"]).doNothing()).returning("key").compile(), ANSWERED_AT_COMMIT);
      if (inserted) return { kind: "claimed" };
      const row = await this.db.selectFrom("idempotency_keys").selectAll().where("project_id", "=", projectId).where("key", "=", key).executeTakeFirst();
      if (!row) continue;
      if (row.until > now) return row.state === "reply" ? { kind: "reply", replyJson: row.reply_json! } : { kind: "running" };
      // A dead claim or an expired reply: take the key over, if no one else did meanwhile.
      const [taken] = await this.writes.writeOne(
        this.db
          .updateTable("idempotency_keys")
          .set({ state: "running", token, until, reply_json: null })
          .where("project_id", "=", projectId)
          .where("key", "=", key)
          .where("state", "=", row.state)
          .where("until", "=", row.until)
          .where((eb) => (row.token === null ? eb("token", "is", null) : eb("token", "=", row.token)))
          .returning("key")
          .compile(),
        ANSWERED_AT_COMMIT,
      );
      if (taken) return { kind: "claimed" };
    }
    return { kind: "running" };
  }

  /** Gives up the claim of `token`: nothing was recorded under the key (or a payment row owns it now). */
  async release(projectId: string, key: string, token: string): Promise<void> {
    await this.writes.writeOne(this.db.deleteFrom("idempotency_keys").where("project_id", "=", projectId).where("key", "=", key).where("token", "=", token).where("state", "=", "running").compile(), ANSWERED_AT_COMMIT);
  }

  /** Turns the claim of `token` into a kept reply, answered to repeats of the key until `until`. */
  async keepReply(projectId: string, key: string, token: string, replyJson: string, until: string): Promise<void> {
    await this.writes.writeOne(
      this.db
        .updateTable("idempotency_keys")
        .set({ state: "reply", token: null, until, reply_json: replyJson })
        .where("project_id", "=", projectId)
        .where("key", "=", key)
        .where("token", "=", token)
        .where("state", "=", "running")
        .compile(),
    );
  }

  /** The reply kept under the key, if one is and has not expired (read only: nothing is claimed). */
  async keptReply(projectId: string, key: string, now: string): Promise<string | undefined> {
    const row = await this.db.selectFrom("idempotency_keys").select(["state", "until", "reply_json"]).where("project_id", "=", projectId).where("key", "=", key).executeTakeFirst();
    return row?.state === "reply" && row.until > now ? row.reply_json! : undefined;
  }

  /** Removes up to `max` kept replies and dead claims that expired before `now`, oldest first, in one write; returns how many went. */
  async pruneExpired(now: string, max = 500): Promise<number> {
    const oldest = this.db.selectFrom("idempotency_keys").select(["project_id", "key"]).where("until", "<", now).orderBy("until").limit(max).$asTuple("project_id", "key");
    const removed = await this.writes.writeOne(
      this.db
        .deleteFrom("idempotency_keys")
        .where((eb) => eb(eb.refTuple("project_id", "key"), "in", oldest))
        .where("until", "<", now)
        .returning("key")
        .compile(),
    );
    return removed.length;
  }
}
