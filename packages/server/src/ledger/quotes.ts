/**
 * Quotes of `POST /v1/quote` (migration 0029_quotes): what was asked and the terms the target named, so
 * that `POST /v1/pay` with the quote's id can require the same again. A quote moves no money; rows live
 * until they expire, then `prune` removes them in bounded batches.
 */
import type { AtomicWrites } from "./atomicWrites.ts";
import type { Db } from "./db.ts";
import type { QuotesTable } from "./schema.ts";

export type QuoteRow = QuotesTable;

/** Expired quotes removed per prune (a quote is a small row; a bounded delete never holds a long lock). */
const PRUNE_BATCH_MAX = 500;

/**
 * Writes go through the ledger's writes, as idempotencyKeys.ts says why: a quote is written on the request's path. A
 * quote is answered at its commit, not after the log's sync: it moves no money, and lost in a crash of the machine, a
 * payment naming it is refused as for an unknown quote (ask for a new one).
 */
export class Quotes {
  constructor(
    private readonly db: Db,
    private readonly writes: AtomicWrites,
  ) {}

  async insert(row: QuoteRow): Promise<void> {
    await this.writes.writeOne(this.db.insertInto("quotes").values(row).compile(), { durable: false });
  }

  /** The project's quote by id (another project's answers as unknown). */
  async get(projectId: string, id: string): Promise<QuoteRow | undefined> {
    const row = await this.db.selectFrom("quotes").selectAll().where("id", "=", id).where("project_id", "=", projectId).executeTakeFirst();
    return row ? { ...row, amount_micros: Number(row.amount_micros) } : undefined;
  }

  /** Deletes up to PRUNE_BATCH_MAX quotes that expired before `before`; returns how many. */
  async prune(before: string): Promise<number> {
    const ids = this.db.selectFrom("quotes").select("id").where("expires_at", "<", before).limit(PRUNE_BATCH_MAX);
    return (await this.writes.writeOne(this.db.deleteFrom("quotes").where("id", "in", ids).returning("id").compile())).length;
  }
}
