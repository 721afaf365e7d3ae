/**
 * The ledger's writes, atomic the same way on both databases: on SQLite they join the group commit
 * (groupCommit.ts: a savepoint each, a shared commit), on PostgreSQL each is a statement or a transaction
 * of its own. Shared by the Ledger and the stores it is made of (relayerNonces.ts).
 */
import { CompiledQuery } from "kysely";
import type { Db } from "./db.ts";
import type { GroupCommit } from "./groupCommit.ts";

/** A write as a generator of compiled statements: each `yield` runs one and gives back its rows. */
export type Steps<T> = Generator<CompiledQuery, T, unknown[]>;

export class AtomicWrites {
  constructor(
    private readonly db: Db,
    /** SQLite: the group commit; undefined on PostgreSQL. */
    private readonly group: GroupCommit | undefined,
  ) {}

  /**
   * A write of one statement, atomic on its own: the group commit, or on PostgreSQL no BEGIN/COMMIT. With
   * `durable: false` it is answered once committed and visible, before it is on disk (SQLite: at the batch's
   * commit, on disk with the next sync; PostgreSQL: `synchronous_commit = off` for its transaction, on disk
   * within the WAL writer's delay). Only for a write whose loss in a crash loses nothing that counts.
   */
  async writeOne<R>(query: CompiledQuery<R>, o: { durable?: boolean } = {}): Promise<R[]> {
    if (this.group) return this.group.write((run) => run(query), o);
    if (o.durable !== false) return (await this.db.executeQuery(query)).rows;
    return this.db.transaction().execute(async (trx) => {
      await trx.executeQuery(CompiledQuery.raw("set local synchronous_commit = off"));
      return (await trx.executeQuery(query)).rows;
    });
  }

  /**
   * Runs a write described as a generator of compiled statements (each `yield` gives back its rows)
   * atomically: on SQLite in the group commit (its own savepoint, a shared commit), on PostgreSQL in a
   * transaction of its own. One body for both; a throw inside rolls the write back.
   */
  atomically<T>(steps: () => Steps<T>): Promise<T> {
    if (this.group) {
      return this.group.write((run) => {
        const g = steps();
        let r = g.next();
        while (!r.done) r = g.next(run(r.value));
        return r.value;
      });
    }
    return this.db.transaction().execute(async (trx) => {
      const g = steps();
      let r = g.next();
      while (!r.done) r = g.next((await trx.executeQuery(r.value)).rows as unknown[]);
      return r.value;
    });
  }
}
