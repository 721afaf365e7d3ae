/**
 * The console's list of a project's transactions (services/console/transactionList.ts): one row per payment
 * or deposit, its fee row folded in beside it, with the agent (token) that paid and the counterparty; filters
 * by agent (with its sub-agents), rail, counterparty and amount beside the API's type, status and time.
 *
 * Order and pages: newest first by `created_at`, then by position, as the API's filtered list; a page is a
 * keyset range after (or, going back, before) a row's `(created_at, pos)`, so any page costs the same as the
 * first, and an export reads the whole list page by page. Each page reads one index in order and stops
 * after `limit + 1` matches: without an agent, `(project_id, created_at, pos)` of `transactions` (migration
 * 0026 on PostgreSQL, 0031 on SQLite); with one, one range per token of `payments (project_id, token_id,
 * created_at)` (migration 0031), merged. Rail and type narrow the same range; a counterparty substring and
 * an amount range are read off the rows of that range (no index can answer a substring).
 */
import { type RawBuilder, sql } from "kysely";
import type { Db } from "./db.ts";
import type { TransactionsTable } from "./schema.ts";
import type { TransactionReads } from "./transactionReads.ts";

/** Every type the console lists as a row: a payment's fee is shown on its payment's row. */
export const LISTED_TYPES = ["usdc_fund", "payment", "x402_payment", "usdc_transfer"] as const;

export const LISTED_STATUSES: readonly string[] = ["pending", "processing", "completed", "failed", "reversed"];

export type ConsoleFilter = {
  /** Non-empty, among LISTED_TYPES (a rail filter is a type: x402 → x402_payment, fiat → payment). */
  types: readonly string[];
  /** Absent: every status. */
  statuses?: readonly string[];
  /** Normalised ISO 8601, exclusive bounds. */
  createdAfter?: string;
  createdBefore?: string;
  /** Payments of these tokens only (an agent, with its descendants when asked); non-empty. */
  tokenIds?: readonly string[];
  /** Lower-case text the counterparty (recipient, merchant or description) contains. */
  counterparty?: string;
  /** Inclusive bounds on the amount in micro-USD (bank cents × 10,000). */
  minMicros?: number;
  maxMicros?: number;
};

/** The row a page starts after (`after`, going on) or ends before (`before`, going back). */
export type ListKey = { createdAt: string; pos: number };

/**
 * The most rows a count of the list reads (an agent, counterparty or amount filter): each page load counts
 * again, and a count without a bound read every matching row of the project (a scan per page at 1M rows).
 */
export const COUNTED_ROWS_MAX = 10_000;

/** The list's size and a page's place in it; a capped number is `countedMax`, and there are more. */
export type ListCount = { total: number; newer: number; totalCapped: boolean; newerCapped: boolean };

export type ConsoleRow = Pick<TransactionsTable, "id" | "type" | "status" | "amount" | "currency" | "description" | "merchant_name" | "created_at" | "completed_at"> & {
  pos: number;
  /** The payment's (null for a deposit). */
  recipient: string | null;
  recipient_json: string | null;
  failure_code: string | null;
  failure_reason: string | null;
  token_id: string | null;
  token_name: string | null;
  token_prefix: string | null;
  /** The fee row's amount, in its currency's unit, or null (a deposit). */
  fee_amount: number | null;
  fee_currency: "usd" | "usdc" | null;
  /** The payment's on-chain transaction, or the deposit's. */
  tx_hash: string | null;
  /** A deposit's sender. */
  from_address: string | null;
};

export class ConsoleTransactions {
  constructor(
    private readonly db: Db,
    private readonly reads: TransactionReads,
  ) {}

  /** Up to `limit` rows after `after` (newest first) or before `before` (still returned newest first), and whether more lie that way. */
  async page(projectId: string, f: ConsoleFilter, p: { limit: number; after?: ListKey; before?: ListKey }): Promise<{ rows: ConsoleRow[]; more: boolean }> {
    if (isEmptyRange(f)) return { rows: [], more: false };
    const back = p.before !== undefined;
    const keys = pageKeys(projectId, f, back ? p.before : p.after, back, p.limit);
    const rows = await this.rowsOf(projectId, keys, back);
    const more = rows.length > p.limit;
    const page = rows.slice(0, p.limit);
    return { rows: back ? page.reverse() : page, more };
  }

  /** One listed row (a payment with its fee, or a deposit) of the project, or undefined (a fee row is its payment's). */
  async one(projectId: string, id: string): Promise<ConsoleRow | undefined> {
    const rows = await this.rowsOf(projectId, sql`select created_at, pos from transactions where project_id = ${projectId} and id = ${id} and type <> 'platform_fee'`, false);
    return rows[0];
  }

  /** The rows of these keys, with their payment, token, fee row and deposit, in the keys' order. */
  private async rowsOf(projectId: string, keys: RawBuilder<unknown>, back: boolean): Promise<ConsoleRow[]> {
    const dir = sql.raw(back ? "asc" : "desc");
    const { rows } = await sql<ConsoleRow>`
      select t.id, t.pos, t.type, t.status, t.amount, t.currency, t.description, t.merchant_name, t.created_at, t.completed_at,
        p.recipient, p.recipient_json, p.failure_code, p.failure_reason, p.token_id, k.name as token_name, k.display_prefix as token_prefix,
        fee.amount as fee_amount, fee.currency as fee_currency, coalesce(p.tx_hash, d.tx_hash) as tx_hash, d.from_address
      from (${keys}) as x
      join transactions t on t.project_id = ${projectId} and t.pos = x.pos
      left join payments p on p.id = t.id
      left join api_tokens k on k.id = p.token_id
      left join transactions fee on fee.payment_id = t.id and fee.type = 'platform_fee'
      left join deposits d on d.txn_id = t.id
      order by x.created_at ${dir}, x.pos ${dir}`.execute(this.db);
    return rows.map((r) => ({ ...r, pos: Number(r.pos), amount: Number(r.amount), fee_amount: r.fee_amount === null ? null : Number(r.fee_amount) }));
  }

  /**
   * How many rows match, and how many of them come before (are newer than) `key`: the page's place in the
   * list. Filters the API's list also has (type, rail, status, time) are counted exactly on its per-day
   * counters (transactionReads.ts `countFiltered`), whatever the history's size. An agent, a counterparty or
   * an amount range are counted by reading rows (an agent's on its payments' index), so each count stops at
   * `countedMax`: past it, the number is `countedMax` and `totalCapped` (or `newerCapped`) says there are
   * more (decisions.md, "The console's transactions list", "A count of read rows stops").
   */
  async count(projectId: string, f: ConsoleFilter, key?: ListKey, countedMax = COUNTED_ROWS_MAX): Promise<ListCount> {
    if (isEmptyRange(f)) return { total: 0, newer: 0, totalCapped: false, newerCapped: false };
    if (!f.tokenIds && f.counterparty === undefined && f.minMicros === undefined && f.maxMicros === undefined) {
      const counted = { types: f.types, statuses: f.statuses ?? LISTED_STATUSES, createdAfter: f.createdAfter, createdBefore: f.createdBefore };
      const newer = async (k: ListKey) => {
        const after = f.createdAfter !== undefined && f.createdAfter > k.createdAt ? f.createdAfter : k.createdAt;
        const ties = sql<{ n: number | string }>`select count(*) as n from transactions t where ${sql.join([...conditions(projectId, f), sql`t.created_at = ${k.createdAt}`, sql`t.pos > ${k.pos}`], sql` and `)}`;
        const [later, same] = await Promise.all([this.reads.countFiltered(projectId, { ...counted, createdAfter: after }), ties.execute(this.db)]);
        return later + Number(same.rows[0]?.n ?? 0);
      };
      const [total, n] = await Promise.all([this.reads.countFiltered(projectId, counted), key ? newer(key) : 0]);
      return { total, newer: n, totalCapped: false, newerCapped: false };
    }
    // Each count reads at most countedMax + 1 matching rows: one more than the cap tells "more than countedMax".
    const upTo = async (extra: RawBuilder<unknown>[]) => {
      const { rows } = await sql<{ n: number | string }>`select count(*) as n from (select 1 as one ${fromWhere(projectId, f, extra)} limit ${countedMax + 1}) as counted`.execute(this.db);
      const n = Number(rows[0]?.n ?? 0);
      return { n: Math.min(n, countedMax), capped: n > countedMax };
    };
    // Newer than the key: the plain bound on created_at keeps the read on the time index.
    const newerThan = (k: ListKey) => [sql`t.created_at >= ${k.createdAt}`, sql`(t.created_at, t.pos) > (${k.createdAt}, ${k.pos})`];
    const [total, newer] = await Promise.all([upTo([]), key ? upTo(newerThan(key)) : { n: 0, capped: false }]);
    return { total: total.n, newer: newer.n, totalCapped: total.capped, newerCapped: newer.capped };
  }

  /** A transaction's place in the order, if it is one of the project's listed rows. */
  async keyOf(projectId: string, id: string): Promise<ListKey | undefined> {
    const row = await this.db.selectFrom("transactions").select(["created_at", "pos"]).where("id", "=", id).where("project_id", "=", projectId).where("type", "!=", "platform_fee").executeTakeFirst();
    return row && row.pos !== null ? { createdAt: row.created_at, pos: Number(row.pos) } : undefined;
  }

  /** The token and every token below it (token_lineage), the token first. */
  async withDescendants(projectId: string, tokenId: string, max: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom("token_lineage as l")
      .innerJoin("api_tokens as k", "k.id", "l.descendant_id")
      .select("l.descendant_id")
      .where("l.ancestor_id", "=", tokenId)
      .where("k.project_id", "=", projectId)
      .orderBy("l.depth")
      .orderBy("l.descendant_id")
      .limit(max)
      .execute();
    return [tokenId, ...rows.map((r) => r.descendant_id)];
  }
}

/** The conditions on `t` (a listed row) and, with a counterparty, on `p` (its payment). */
function conditions(projectId: string, f: ConsoleFilter): RawBuilder<unknown>[] {
  const all = f.types.length === LISTED_TYPES.length;
  return [
    sql`t.project_id = ${projectId}`,
    all ? sql`t.type <> 'platform_fee'` : sql`t.type in (${sql.join(f.types)})`,
    ...(f.statuses ? [sql`t.status in (${sql.join(f.statuses)})`] : []),
    ...(f.createdAfter !== undefined ? [sql`t.created_at > ${f.createdAfter}`] : []),
    ...(f.createdBefore !== undefined ? [sql`t.created_at < ${f.createdBefore}`] : []),
    ...(f.minMicros !== undefined ? [sql`${MICROS} >= ${f.minMicros}`] : []),
    ...(f.maxMicros !== undefined ? [sql`${MICROS} <= ${f.maxMicros}`] : []),
    ...(f.counterparty !== undefined ? [sql`lower(coalesce(p.recipient, t.merchant_name, t.description, '')) like ${`%${escapeLike(f.counterparty)}%`} escape '\\'`] : []),
  ];
}

const MICROS = sql`(case when t.currency = 'usd' then t.amount * 10000 else t.amount end)`;

/** `from … where …` of the rows that match (no keyset): one token's range, a set of tokens', or the project's. */
function fromWhere(projectId: string, f: ConsoleFilter, extra: RawBuilder<unknown>[]): RawBuilder<unknown> {
  const conds = [...conditions(projectId, f), ...extra];
  if (f.tokenIds) {
    return sql`from payments p join transactions t on t.id = p.id where p.project_id = ${projectId} and p.token_id in (${sql.join(f.tokenIds)}) and ${sql.join(conds, sql` and `)}`;
  }
  const join = f.counterparty !== undefined ? sql`left join payments p on p.id = t.id` : sql``;
  return sql`from transactions t ${join} where ${sql.join(conds, sql` and `)}`;
}

/**
 * The page's keys, `limit + 1` at most: one ordered range of the project's rows, or, with agents, one per
 * token (each stops after `limit + 1`), merged. `back`: the rows after `key` in time, nearest first.
 */
function pageKeys(projectId: string, f: ConsoleFilter, key: ListKey | undefined, back: boolean, limit: number): RawBuilder<unknown> {
  const dir = sql.raw(back ? "asc" : "desc");
  const keyset = key ? [back ? sql`(t.created_at, t.pos) > (${key.createdAt}, ${key.pos})` : sql`(t.created_at, t.pos) < (${key.createdAt}, ${key.pos})`] : [];
  if (!f.tokenIds) {
    return sql`select t.created_at, t.pos ${fromWhere(projectId, f, keyset)} order by t.created_at ${dir}, t.pos ${dir} limit ${limit + 1}`;
  }
  // A payment's created_at is its row's: bounding p.created_at too keeps each token's range on its index.
  const bound = key ? [back ? sql`p.created_at >= ${key.createdAt}` : sql`p.created_at <= ${key.createdAt}`] : [];
  const ranges = f.tokenIds.map((tokenId, i) => {
    const alias = sql.raw(`r_${i}`);
    const where = sql.join([sql`p.project_id = ${projectId}`, sql`p.token_id = ${tokenId}`, ...bound, ...conditions(projectId, f), ...keyset], sql` and `);
    return sql`select created_at, pos from (select t.created_at, t.pos from payments p join transactions t on t.id = p.id where ${where} order by p.created_at ${dir}, t.pos ${dir} limit ${limit + 1}) as ${alias}`;
  });
  return sql`${sql.join(ranges, sql` union all `)} order by created_at ${dir}, pos ${dir} limit ${limit + 1}`;
}

function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

function isEmptyRange(f: ConsoleFilter): boolean {
  return (f.createdAfter !== undefined && f.createdBefore !== undefined && f.createdAfter >= f.createdBefore) || (f.minMicros !== undefined && f.maxMicros !== undefined && f.minMicros > f.maxMicros);
}
