/**
 * API tokens: issued, looked up by hash on every request (batched: see findByHash), listed, revoked,
 * and the spending controls set on a token or its project. A Ledger's `tokens`.
 */
import type { CompiledQuery } from "kysely";
import type { Clock } from "../ids.ts";
import { scheduleFlush } from "./batching.ts";
import { type Db, type SqliteDirect, withParameters } from "./db.ts";
import type { Database } from "./schema.ts";
import type { Actor } from "../domain/audit.ts";
import { withAudit } from "./auditLog.ts";

/**
 * The token, its project and the project's balance in one statement — authentication needs the first
 * two, and GET /v1/balance answers from the third without a second round trip — for `n` token hashes
 * at once (`token_hash in (?, …)`), each row with its hash.
 */
const compileTokenQuery = (db: Db, n: number) =>
  db
    .selectFrom("api_tokens")
    .innerJoin("projects", "projects.id", "api_tokens.project_id")
    .innerJoin("balances", "balances.project_id", "api_tokens.project_id")
    .select([
      "api_tokens.token_hash",
      "api_tokens.id",
      "api_tokens.project_id",
      "api_tokens.permissions",
      "api_tokens.expires_at",
      "api_tokens.revoked_at",
      "api_tokens.spending_controls as token_controls",
      "projects.spending_controls as project_controls",
      "projects.paused",
      "projects.plan",
      "projects.wallet_address",
      "projects.wallet_frozen_at",
      "balances.available_micros",
      "balances.pending_micros",
      "balances.total_funded_micros",
      "balances.total_spent_micros",
    ])
    .where("api_tokens.token_hash", "in", Array.from({ length: n }, () => ""))
    .compile();
export type TokenRow = ReturnType<typeof compileTokenQuery> extends CompiledQuery<infer R> ? R : never;
type TokenWaiter = { resolve(row: TokenRow | undefined): void; reject(err: unknown): void };
/** At most this many distinct tokens in one lookup statement. */
const TOKEN_LOOKUP_BATCH_MAX = 32;

export class Tokens {
  // The lookup every request makes, compiled once: building SQL costs more than running it.
  /** The token lookup by number of hashes, 1..TOKEN_LOOKUP_BATCH_MAX, compiled on first use. */
  private readonly queries: CompiledQuery<TokenRow>[] = [];
  /** Token lookups asked for and not yet read, by hash (batching.ts says when they are read). */
  private lookups: Map<string, TokenWaiter[]> | undefined;
  /** When the last batch of token lookups was read (`performance.now()`). */
  private lastLookupAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    /** SQLite: the token lookup, on every request, runs on the calling stack when it safely can. */
    private readonly read: SqliteDirect["read"] | undefined,
  ) {}

  /** A new token; with an actor, its audit entry in the same transaction. */
  async insert(row: Omit<Database["api_tokens"], "spending_controls"> & { spending_controls?: string | null }, actor?: Actor): Promise<void> {
    await withAudit(this.db, actor, row.created_at, async (trx) => {
      await trx.insertInto("api_tokens").values(row).execute();
      const after = { display_prefix: row.display_prefix, permissions: row.permissions.split(","), expires_at: row.expires_at, spending_controls: controlsOf(row.spending_controls ?? null) };
      return { result: undefined, change: { action: "token.created", projectId: row.project_id, targetId: row.id, before: null, after } };
    });
  }

  /**
   * The token with this hash, its project and balance, read after the request that asks arrived.
   * Lookups asked for together (those of one turn of the event loop when lookups are frequent, at once
   * after a quiet spell: batching.ts) are answered by one statement, so many requests cost one read.
   * Each still sees every change committed before it arrived (revocation holds on the next request).
   */
  findByHash(hash: string): Promise<TokenRow | undefined> {
    let batch = this.lookups;
    if (!batch) {
      const started = (batch = this.lookups = new Map());
      scheduleFlush(this.lastLookupAt, () => {
        this.lookups = undefined;
        this.lastLookupAt = performance.now();
        void this.lookUp(started);
      });
    }
    let waiters = batch.get(hash);
    if (!waiters) batch.set(hash, (waiters = []));
    const list = waiters;
    return new Promise((resolve, reject) => list.push({ resolve, reject }));
  }

  private async lookUp(batch: Map<string, TokenWaiter[]>): Promise<void> {
    const hashes = [...batch.keys()];
    for (let i = 0; i < hashes.length; i += TOKEN_LOOKUP_BATCH_MAX) {
      const chunk = hashes.slice(i, i + TOKEN_LOOKUP_BATCH_MAX);
      try {
        const query = withParameters((this.queries[chunk.length] ??= compileTokenQuery(this.db, chunk.length)), chunk);
        const rows = this.read?.(query) ?? (await this.db.executeQuery(query)).rows;
        const byHash = new Map(rows.map((r) => [r.token_hash, r]));
        for (const h of chunk) for (const w of batch.get(h)!) w.resolve(byHash.get(h));
      } catch (err) {
        for (const h of chunk) for (const w of batch.get(h)!) w.reject(err);
      }
    }
  }

  list(projectId: string) {
    return this.db
      .selectFrom("api_tokens")
      .select(["id", "project_id", "display_prefix", "permissions", "created_at", "expires_at", "revoked_at", "spending_controls"])
      .where("project_id", "=", projectId)
      .orderBy("created_at")
      .execute();
  }

  get(id: string) {
    return this.db.selectFrom("api_tokens").select(["id", "project_id", "display_prefix", "permissions", "created_at", "expires_at", "revoked_at", "spending_controls"]).where("id", "=", id).executeTakeFirst();
  }

  /** Revokes an active token; with an actor, its audit entry in the same transaction. False if none was active. */
  async revoke(id: string, actor?: Actor): Promise<boolean> {
    const at = this.clock().toISOString();
    return withAudit(this.db, actor, at, async (trx) => {
      const r = await trx.updateTable("api_tokens").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null).returning(["project_id"]).executeTakeFirst();
      return { result: !!r, change: r ? { action: "token.revoked", projectId: r.project_id, targetId: id, before: { revoked_at: null }, after: { revoked_at: at } } : null };
    });
  }

  /** Sets (or with null clears) the spending controls of a token or a project; false if there is none with that id. */
  /** With an actor, the controls before are read in the transaction that replaces them, and both go into its audit entry. */
  async setSpendingControls(scope: "token" | "project", id: string, controls: string | null, actor?: Actor): Promise<boolean> {
    return withAudit(this.db, actor, this.clock().toISOString(), async (trx) => {
      const before =
        scope === "token"
          ? await trx.selectFrom("api_tokens").select(["spending_controls", "project_id"]).where("id", "=", id).executeTakeFirst()
          : await trx.selectFrom("projects").select(["spending_controls", "id as project_id"]).where("id", "=", id).executeTakeFirst();
      if (!before) return { result: false, change: null };
      if (scope === "token") await trx.updateTable("api_tokens").set({ spending_controls: controls }).where("id", "=", id).execute();
      else await trx.updateTable("projects").set({ spending_controls: controls }).where("id", "=", id).execute();
      const change = { action: `${scope}.controls_changed` as const, projectId: before.project_id, targetId: id, before: { spending_controls: controlsOf(before.spending_controls) }, after: { spending_controls: controlsOf(controls) } };
      return { result: true, change };
    });
  }
}

/** A controls column as the audit log keeps it: its JSON, parsed (bank accounts in it are keyed hashes already). */
const controlsOf = (c: string | null): unknown => (c === null ? null : JSON.parse(c));
