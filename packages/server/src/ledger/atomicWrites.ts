/**
 * The ledger's writes, atomic the same way on both databases: on SQLite they join the group commit
 * (groupCommit.ts: a savepoint each, a shared commit), on PostgreSQL each is a statement or a transaction
 * of its own. Shared by the Ledger and the stores it is made of (relayerNonces.ts).
 */
import type { CompiledQuery } from "kysely";
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
   * `durable: false` SQLite answers at the commit, before the log's sync (groupCommit.ts): only for a row whose loss
   * in a crash of the machine leaves nothing that anyone relies on (an idempotency key's claim or its release, a quote).
   * PostgreSQL's commit is durable either way.
   */
  async writeOne<R>(query: CompiledQuery<R>, opts: { durable?: boolean } = {}): Promise<R[]> {
    return this.group ? this.group.write((run) => run(query), opts) : (await this.db.executeQuery(query)).rows;
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
