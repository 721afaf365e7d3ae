/**
 * API tokens: issued, looked up by hash on every request (batched: see findByHash), listed, revoked,
 * and the spending controls set on a token or its project. A Ledger's `tokens`. A child token
 * (services/delegation.ts) is written with a row in `token_lineage` for each of its ancestors, so its
 * ancestors, its descendants and a revocation of a whole branch are each one statement.
 */
import { type CompiledQuery, sql } from "kysely";
import type { Clock } from "../ids.ts";
import { scheduleFlush } from "./batching.ts";
import { type Db, type Dialect, type PgDirect, type SqliteDirect, runNamed, withParameters } from "./db.ts";
import type { Database } from "./schema.ts";
import type { Actor, AuditChange } from "../domain/audit.ts";
import { auditInsert } from "./auditLog.ts";
import type { AtomicWrites, Steps } from "./atomicWrites.ts";

/**
 * The token, its project, the project's balance and the token's ancestors in one statement — authentication
 * needs the first two and the ancestors (a child token stands only while they do, and their controls bind its
 * payments), GET /v1/balance answers from the balance and an x402 payment signs from the project's wallet index
 * without a second round trip — for `n` token hashes
 * at once (`token_hash in (?, …)`), each row with its hash.
 */
const compileTokenQuery = (db: Db, dialect: Dialect, n: number) =>
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
      "api_tokens.name",
      "api_tokens.parent_id",
      "api_tokens.depth",
      "api_tokens.allowance_micros",
      "projects.spending_controls as project_controls",
      "projects.paused",
      "projects.plan",
      "projects.wallet_address",
      "projects.wallet_index",
      "projects.wallet_frozen_at",
      "balances.available_micros",
      "balances.pending_micros",
      "balances.total_funded_micros",
      "balances.total_spent_micros",
      ancestorsJson(dialect).as("ancestors_json"),
    ])
    .where("api_tokens.token_hash", "in", Array.from({ length: n }, () => ""))
    .compile();

/**
 * A child token's ancestors as one JSON array, nearest first, each `[id, name, spending_controls, allowance_micros,
 * revoked_at, expires_at]`; null for an operator's token. One value per token: a join would repeat the token's
 * columns for each ancestor, and cost SQLite twice the lookup.
 */
function ancestorsJson(dialect: Dialect) {
  const entry = sql`"a"."id", "a"."name", "a"."spending_controls", "a"."allowance_micros", "a"."revoked_at", "a"."expires_at"`;
  const array = dialect === "postgres" ? sql`json_agg(json_build_array(${entry}) order by "l"."depth")::text` : sql`json_group_array(json_array(${entry}) order by "l"."depth")`;
  return sql<string | null>`case when "api_tokens"."parent_id" is null then null else (select ${array} from "token_lineage" as "l" inner join "api_tokens" as "a" on "a"."id" = "l"."ancestor_id" where "l"."descendant_id" = "api_tokens"."id") end`;
}
type LookupRow = ReturnType<typeof compileTokenQuery> extends CompiledQuery<infer R> ? R : never;
/** A token above the one looked up, as authentication reads it. */
type AncestorRow = { id: string; name: string | null; spending_controls: string | null; allowance_micros: number | null; revoked_at: string | null; expires_at: string | null };
/** A token as the lookup answers it: its row, its project's and its balance's columns, and its ancestors, nearest first (none for an operator's token). */
export type TokenRow = LookupRow & { ancestors: AncestorRow[] };
type TokenWaiter = { resolve(row: TokenRow | undefined): void; reject(err: unknown): void };
/** The columns of a token as lists and services read it (never its hash). */
const TOKEN_COLUMNS = ["id", "project_id", "display_prefix", "name", "permissions", "created_at", "expires_at", "revoked_at", "spending_controls", "parent_id", "depth", "allowance_micros"] as const;
/** A token as lists and services read it. */
export type ListedTokenRow = Pick<Database["api_tokens"], (typeof TOKEN_COLUMNS)[number]>;
/** What a new token's row gives; name, parent, depth and allowance default to none. */
export type NewTokenRow = Omit<Database["api_tokens"], "spending_controls" | "name" | "parent_id" | "depth" | "allowance_micros"> & Partial<Pick<Database["api_tokens"], "spending_controls" | "name" | "allowance_micros">>;
/** At most this many distinct tokens in one lookup statement. */
const TOKEN_LOOKUP_BATCH_MAX = 32;

export class Tokens {
  // The lookup every request makes, compiled once: building SQL costs more than running it.
  /** The token lookup by number of hashes, 1..TOKEN_LOOKUP_BATCH_MAX, compiled on first use. */
  private readonly queries: CompiledQuery<LookupRow>[] = [];
  /** Token lookups asked for and not yet read, by hash (batching.ts says when they are read). */
  private lookups: Map<string, TokenWaiter[]> | undefined;
  /** When the last batch of token lookups was read (`performance.now()`). */
  private lastLookupAt = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    /**
     * The token writes, each an atomic write (atomicWrites.ts): on SQLite they join the group commit, which waits for
     * another connection's write lock on a timer and syncs off the event loop, where a Kysely transaction waited out
     * the lock in SQLite's busy handler with every request of the process stopped.
     */
    private readonly writes: AtomicWrites,
    /** SQLite: the token lookup, on every request, runs on the calling stack when it safely can. */
    private readonly read: SqliteDirect["read"] | undefined,
    /** PostgreSQL: the token lookup runs as a prepared statement (a third of its cost per request). */
    private readonly pg?: PgDirect,
  ) {}

  /** A new token; with an actor, its audit entry in the same transaction. */
  async insert(row: NewTokenRow, actor?: Actor): Promise<void> {
    const db = this.db;
    await this.writes.atomically(function* (): Steps<void> {
      yield db.insertInto("api_tokens").values({ depth: 0, ...row }).compile();
      if (actor) yield auditInsert(db, actor, createdChange(row), row.created_at);
    });
  }

  /**
   * Writes a child of `parentId` with its lineage, in one transaction that first locks the parent's row
   * (PostgreSQL; on SQLite it takes the database's write lock): `check` is given the parent as it is then and the number of
   * its active children, and throws to write nothing or returns the columns it settled (controls, expiry,
   * allowance). A revocation of the parent (revokeBranch) therefore
   * comes wholly before (the check sees it) or after (its second statement sees the child).
   * The audit entry (`actor`: the creating token) is written in the same transaction.
   */
  async insertChild(parentId: string, row: NewTokenRow, actor: Actor, check: (parent: ListedTokenRow, activeChildren: number) => Pick<NewTokenRow, "spending_controls" | "expires_at" | "allowance_micros">): Promise<void> {
    const now = this.clock().toISOString();
    const { db, dialect } = this;
    await this.writes.atomically(function* (): Steps<void> {
      // On SQLite the write holds the database's write lock from its start (the group commit's `begin immediate`).
      let q = db.selectFrom("api_tokens").select(TOKEN_COLUMNS).where("id", "=", parentId);
      if (dialect === "postgres") q = q.forUpdate();
      const [parent] = (yield q.compile()) as ListedTokenRow[];
      if (!parent) throw new Error(`insertChild: no parent token ${parentId}`);
      const [children] = (yield db
        .selectFrom("api_tokens")
        .select((eb) => eb.fn.countAll<number>().as("n"))
        .where("parent_id", "=", parentId)
        .where("revoked_at", "is", null)
        .where((eb) => eb.or([eb("expires_at", "is", null), eb("expires_at", ">", now)]))
        .compile()) as { n: number | string }[];
      const settled = check(parent, Number(children!.n));
      const written = { ...row, ...settled, parent_id: parentId, depth: Number(parent.depth) + 1 };
      yield db.insertInto("api_tokens").values(written).compile();
      yield db.insertInto("token_lineage").values({ ancestor_id: parentId, descendant_id: row.id, depth: 1 }).compile();
      yield db
        .insertInto("token_lineage")
        .columns(["ancestor_id", "descendant_id", "depth"])
        .expression((eb) => eb.selectFrom("token_lineage").select([eb.ref("ancestor_id").as("ancestor_id"), eb.val(row.id).as("descendant_id"), eb(eb.ref("depth"), "+", 1).as("depth")]).where("descendant_id", "=", parentId))
        .compile();
      yield auditInsert(db, actor, createdChange(written), row.created_at);
    });
  }

  /** A token's ancestors, nearest first (none for an operator's token). */
  ancestorsOf(id: string): Promise<ListedTokenRow[]> {
    return this.kin("ancestor_id", "descendant_id", id).orderBy("token_lineage.depth").execute();
  }

  /** The first `limit` descendants of a token (children, their children, …), oldest first. */
  descendantsOf(id: string, limit: number): Promise<ListedTokenRow[]> {
    return this.kin("descendant_id", "ancestor_id", id).orderBy("api_tokens.created_at").orderBy("api_tokens.id").limit(limit).execute();
  }

  /** The tokens on the `side` of `id`'s lineage rows, where `id` is on the other. */
  private kin(side: "ancestor_id" | "descendant_id", other: "ancestor_id" | "descendant_id", id: string) {
    return this.db
      .selectFrom("token_lineage")
      .innerJoin("api_tokens", "api_tokens.id", `token_lineage.${side}`)
      .select(TOKEN_COLUMNS.map((c) => `api_tokens.${c}` as const))
      .where(`token_lineage.${other}`, "=", id);
  }

  /** Whether `id` is a descendant of `ancestorId`. */
  async isDescendant(ancestorId: string, id: string): Promise<boolean> {
    return (await this.db.selectFrom("token_lineage").select("depth").where("ancestor_id", "=", ancestorId).where("descendant_id", "=", id).executeTakeFirst()) !== undefined;
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
        const query = withParameters((this.queries[chunk.length] ??= compileTokenQuery(this.db, this.dialect, chunk.length)), chunk);
        const rows = this.read?.(query) ?? (await runNamed(this.db, this.pg, `aw_token_lookup_${chunk.length}`, query));
        const byHash = new Map(rows.map((r) => [r.token_hash, r]));
        for (const h of chunk) {
          const row = byHash.get(h);
          const token = row && tokenOf(row);
          for (const w of batch.get(h)!) w.resolve(token);
        }
      } catch (err) {
        for (const h of chunk) for (const w of batch.get(h)!) w.reject(err);
      }
    }
  }

  list(projectId: string): Promise<ListedTokenRow[]> {
    return this.db
      .selectFrom("api_tokens")
      .select(TOKEN_COLUMNS)
      .where("project_id", "=", projectId)
      .orderBy("created_at")
      .execute();
  }

  get(id: string): Promise<ListedTokenRow | undefined> {
    return this.db.selectFrom("api_tokens").select(TOKEN_COLUMNS).where("id", "=", id).executeTakeFirst();
  }

  /**
   * Revokes an active token and, in the same transaction, every active descendant of it: the next request
   * of any of them is refused. The token's row first (waiting for a child being written under it,
   * insertChild), then its descendants, read by a later statement that sees such a child. With an actor,
   * its audit entry in the same transaction. False if the token was not active.
   */
  async revoke(id: string, actor?: Actor): Promise<boolean> {
    const at = this.clock().toISOString();
    const db = this.db;
    return this.writes.atomically(function* (): Steps<boolean> {
      const [r] = (yield db.updateTable("api_tokens").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null).returning(["project_id"]).compile()) as { project_id: string }[];
      if (!r) return false;
      const below = (yield db
        .updateTable("api_tokens")
        .set({ revoked_at: at })
        .where("id", "in", (eb) => eb.selectFrom("token_lineage").select("descendant_id").where("ancestor_id", "=", id))
        .where("revoked_at", "is", null)
        .returning(["id"])
        .compile()) as { id: string }[];
      // The descendants the revocation took with it, so the one entry accounts for every token it stopped.
      const after = below.length ? { revoked_at: at, descendants_revoked: below.map((d) => d.id).sort() } : { revoked_at: at };
      if (actor) yield auditInsert(db, actor, { action: "token.revoked", projectId: r.project_id, targetId: id, before: { revoked_at: null }, after }, at);
      return true;
    });
  }

  /** Sets (or with null clears) the spending controls of a token or a project; false if there is none with that id. */
  /** With an actor, the controls before are read in the transaction that replaces them, and both go into its audit entry. */
  async setSpendingControls(scope: "token" | "project", id: string, controls: string | null, actor?: Actor): Promise<boolean> {
    const at = this.clock().toISOString();
    const db = this.db;
    return this.writes.atomically(function* (): Steps<boolean> {
      const [before] = (yield scope === "token"
        ? db.selectFrom("api_tokens").select(["spending_controls", "project_id"]).where("id", "=", id).compile()
        : db.selectFrom("projects").select(["spending_controls", "id as project_id"]).where("id", "=", id).compile()) as { spending_controls: string | null; project_id: string }[];
      if (!before) return false;
      yield scope === "token" ? db.updateTable("api_tokens").set({ spending_controls: controls }).where("id", "=", id).compile() : db.updateTable("projects").set({ spending_controls: controls }).where("id", "=", id).compile();
      if (actor) {
        const change = { action: `${scope}.controls_changed` as const, projectId: before.project_id, targetId: id, before: { spending_controls: controlsOf(before.spending_controls) }, after: { spending_controls: controlsOf(controls) } };
        yield auditInsert(db, actor, change, at);
      }
      return true;
    });
  }
}

/** A looked-up row as a TokenRow: its ancestors' JSON read into rows (set on the row itself: copying its columns cost more). */
function tokenOf(row: LookupRow): TokenRow {
  const entries = row.ancestors_json === null ? [] : (JSON.parse(row.ancestors_json) as [string, string | null, string | null, number | null, string | null, string | null][]);
  return Object.assign(row, { ancestors: entries.map(([id, name, spending_controls, allowance_micros, revoked_at, expires_at]) => ({ id, name, spending_controls, allowance_micros, revoked_at, expires_at })) });
}

/** A new token's audit entry: what it may do and under whom (never its hash). */
function createdChange(row: NewTokenRow & { parent_id?: string | null; depth?: number }): AuditChange {
  const after = {
    name: row.name ?? null,
    display_prefix: row.display_prefix,
    permissions: row.permissions.split(","),
    expires_at: row.expires_at,
    spending_controls: controlsOf(row.spending_controls ?? null),
    ...(row.parent_id ? { parent_id: row.parent_id, depth: row.depth, allowance_micros: row.allowance_micros ?? null } : {}),
  };
  return { action: "token.created", projectId: row.project_id, targetId: row.id, before: null, after };
}

/** A controls column as the audit log keeps it: its JSON, parsed (bank accounts in it are keyed hashes already). */
const controlsOf = (c: string | null): unknown => (c === null ? null : JSON.parse(c));
