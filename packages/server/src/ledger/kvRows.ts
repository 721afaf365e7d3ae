/**
 * Small persistent state: `kv` rows, a key and a text value, for cursors, markers and counters that need
 * no table of their own (the deposit watcher's block cursor, lost relayer transactions, the sandbox
 * off-ramp's payouts). A Ledger's `kv`.
 */
import type { AtomicWrites } from "./atomicWrites.ts";
import type { Db } from "./db.ts";

/**
 * Writes go through the ledger's writes (atomicWrites.ts; idempotencyKeys.ts says why): the deposit watcher writes its
 * cursor from the request thread every time the chain moves.
 */
export class KvRows {
  constructor(
    private readonly db: Db,
    private readonly writes: AtomicWrites,
  ) {}

  async get(key: string): Promise<string | undefined> {
    return (await this.db.selectFrom("kv").select("value").where("key", "=", key).executeTakeFirst())?.value;
  }

  async set(key: string, value: string): Promise<void> {
    await this.writes.writeOne(this.db.insertInto("kv").values({ key, value }).onConflict((oc) => oc.column("key").doUpdateSet({ value })).compile());
  }

  /**
   * Stores `value` under `key` unless the key has one already, in one statement, and answers the value
   * the key holds then: the first writer's. Two writers racing for one key both get the same answer.
   */
  async claim(key: string, value: string): Promise<string> {
    await this.writes.writeOne(this.db.insertInto("kv").values({ key, value }).onConflict((oc) => oc.column("key").doNothing()).compile());
    return (await this.get(key))!;
  }

  /**
   * Up to `limit` rows whose key starts with `prefix`, in key order; with `after`, those after that key, so a
   * caller can walk through more rows than one read holds.
   */
  withPrefix(prefix: string, limit: number, after?: string): Promise<{ key: string; value: string }[]> {
    let q = this.db.selectFrom("kv").select(["key", "value"]).where("key", "like", `${prefix}%`);
    if (after !== undefined) q = q.where("key", ">", after);
    return q.orderBy("key").limit(limit).execute();
  }

  async delete(key: string): Promise<void> {
    await this.writes.writeOne(this.db.deleteFrom("kv").where("key", "=", key).compile());
  }
}
