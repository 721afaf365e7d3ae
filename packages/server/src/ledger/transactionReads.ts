/**
 * Reads of transactions beyond the plain page (balances.ts `listTransactions`): one transaction with what
 * its payment or deposit adds, and filtered or cursor pages (decisions.md, "Filtered lists").
 *
 * A filtered page is read as one index range per (type, status) pair asked for, on
 * `(project_id, type, status, created_at, pos)`: each range gives at most offset + limit + 1 keys,
 * newest first, and the union of those keys is cut to the page. Every pair costs one seek and at most
 * a page of index entries, whatever the table's size or the filters' selectivity. Order: newest first by
 * `created_at`, then by position (recording order) among equal times. On PostgreSQL the ranges are one
 * prepared text per number of pairs (`pageKeys`). An unfiltered list keeps the plain
 * list's order, by position, with a cursor too, so its pages follow on from the plain list's.
 */
import { type CompiledQuery, type RawBuilder, sql } from "kysely";
import { type Db, type Dialect, type PgDirect, runNamed } from "./db.ts";
import type { TransactionsTable } from "./schema.ts";

export type TransactionFilter = {
  /** Non-empty; every type when the caller gave none. */
  types: readonly string[];
  /** Non-empty; every status when the caller gave none. */
  statuses: readonly string[];
  /** Normalised ISO 8601 (`Date#toISOString`), exclusive bounds. */
  createdAfter?: string;
  createdBefore?: string;
  /** The caller gave neither type nor status (`types` and `statuses` list every one): a time range alone. */
  timeRangeOnly?: boolean;
};
/** The row a cursor points at: the page holds the rows listed after it. */
export type Cursor = { createdAt: string; pos: number };

/** A transaction row as listed: the table's own columns, then what its payment adds. */
export type ListedRow = Pick<
  TransactionsTable,
  "id" | "type" | "status" | "amount" | "currency" | "description" | "merchant_name" | "created_at" | "completed_at" | "payment_id"
> & {
  /** The payment's metadata (JSON text) when this row is the payment's own row, else null. */
  metadata: string | null;
  /** The payment's, for a row of a payment. */
  failure_code: string | null;
  failure_reason: string | null;
};

export type DetailRow = ListedRow & {
  rail: "x402" | "usdc_transfer" | "fiat" | null;
  recipient: string | null;
  recipient_json: string | null;
  payment_tx_hash: string | null;
  fee_txn_id: string | null;
  deposit_tx_hash: string | null;
  /** The payment's own row only (null on its fee's row and elsewhere): its rail's stored state. */
  rail_state: string | null;
  /** On a payment's own row: its approval (null when it needed none), until when, and when decided. */
  approval: string | null;
  approval_until: string | null;
  approval_decided_at: string | null;
  /** Who decided it, their name then, and the reason they gave (migrations 0014, 0028). */
  approval_decided_by: string | null;
  approval_decided_by_name: string | null;
  approval_reason: string | null;
};

/** The columns of a listed row, from `transactions t` and `payments p`. */
const LISTED_COLUMNS = sql`t.id, t.type, t.status, t.amount, t.currency, t.description, t.merchant_name, t.created_at, t.completed_at, t.payment_id,
        case when p.id = t.id then p.metadata end as metadata, p.failure_code, p.failure_reason`;

/** The rows of a page's keys (`k`: created_at, pos), in the page's order. */
const rowsOfKeys = (keys: RawBuilder<unknown>, projectId: string) => sql<ListedRow>`
      select ${LISTED_COLUMNS}
      from (${keys}) as k
      join transactions t on t.project_id = ${projectId} and t.pos = k.pos
      left join payments p on p.id = t.payment_id
      order by k.created_at desc, k.pos desc`;

/**
 * The page's keys: one index range per (type, status) pair, merged and cut to `offset`, `limit + 1` (SQLite
 * reads each range lazily in the page's order and stops at the cut). On
 * PostgreSQL the text depends only on the number of pairs, so that it runs as a prepared statement planned once
 * per connection (`ledger/db.ts` `pgDirectOf`): planning the union cost more than reading the page. Its bounds are
 * values: after `created_at > $after` (the empty string when none), below the key `(created_at, pos) < ($before,
 * $beforePos)`, the lower of the upper time bound and the cursor (`UPPER_END` when neither). A time range alone is
 * one range of `(project_id, created_at, pos)` (migration 0026 on PostgreSQL, 0032 on SQLite), not one per pair.
 */
function pageKeys(projectId: string, f: TransactionFilter, cursor: Cursor | undefined, limit: number, offset: number, dialect: Dialect): RawBuilder<unknown> {
  const bounds = dialect === "postgres" ? boundsAsValues(f, cursor) : givenBounds(f, cursor);
  const cut = sql`order by created_at desc, pos desc limit ${limit + 1} offset ${offset}`;
  if (f.timeRangeOnly) return sql`select created_at, pos from transactions where ${sql.join([sql`project_id = ${projectId}`, ...bounds], sql` and `)} ${cut}`;
  const ranges = pairsOf(f).map(([type, status], i) => {
    const where = sql.join([sql`project_id = ${projectId}`, sql`type = ${type}`, sql`status = ${status}`, ...bounds], sql` and `);
    // SQLite merges the ranges as each reads its index in the page's order, and stops at the limit: an arm of its own
    // with a limit was sorted again (a temporary B-tree per pair: 4.5× the time at offset 1,000).
    if (dialect !== "postgres") return sql`select created_at, pos from transactions where ${where}`;
    return sql`select created_at, pos from (select created_at, pos from transactions where ${where} order by created_at desc, pos desc limit ${offset + limit + 1}) as ${sql.raw(`r_${i}`)}`;
  });
  return sql`${sql.join(ranges, sql` union all `)} ${cut}`;
}

/** The bounds the caller gave, each a condition (SQLite). */
function givenBounds(f: TransactionFilter, cursor: Cursor | undefined): RawBuilder<unknown>[] {
  return [
    ...(f.createdAfter !== undefined ? [sql`created_at > ${f.createdAfter}`] : []),
    ...(f.createdBefore !== undefined ? [sql`created_at < ${f.createdBefore}`] : []),
    ...(cursor ? [sql`(created_at, pos) < (${cursor.createdAt}, ${cursor.pos})`] : []),
  ];
}

/** The bounds as values, the same two conditions whichever were given (PostgreSQL: one text per number of pairs). */
function boundsAsValues(f: TransactionFilter, cursor: Cursor | undefined): RawBuilder<unknown>[] {
  const [before, beforePos] = upperEnd(f, cursor);
  return [sql`created_at > ${f.createdAfter ?? ""}`, sql`(created_at, pos) < (${before}, ${beforePos})`];
}

/** Every (type, status) pair the filter asks for. */
function pairsOf(f: TransactionFilter): [string, string][] {
  return f.types.flatMap((type) => f.statuses.map((status): [string, string] => [type, status]));
}

/** Above every `created_at` (ISO 8601 of a year ≤ 9999), with the least position: the key range's end when the page has no upper bound. */
const UPPER_END: readonly [string, string] = ["9999-12-31T23:59:59.999Z", "-9223372036854775808"];

/** The page's upper end: the lower of `created_before` (exclusive, so below every position of that instant) and the cursor. */
function upperEnd(f: TransactionFilter, cursor: Cursor | undefined): readonly [string, string] {
  const before: readonly [string, string] | undefined = f.createdBefore !== undefined ? [f.createdBefore, UPPER_END[1]] : undefined;
  if (!cursor) return before ?? UPPER_END;
  const atCursor: readonly [string, string] = [cursor.createdAt, String(cursor.pos)];
  // ISO 8601 texts of one format order the same as their instants; at one instant, `before` lies below every position.
  return before && before[0] <= atCursor[0] ? before : atCursor;
}

/** One project's transactions as the list, the detail and the console read them (a Ledger's `transactions`). */
export class TransactionReads {
  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    /** PostgreSQL: the filtered and cursor pages and their counts run as prepared statements, planned once per connection. */
    private readonly pg?: PgDirect,
  ) {}

  /** A query of one fixed text per `name`: prepared on PostgreSQL when the pool offers it. */
  private run<R>(name: string, query: CompiledQuery<R>): Promise<R[]> {
    return runNamed(this.db, this.pg, name, query);
  }

  /**
   * A filtered (or cursor) page, newest first: up to `limit` rows and whether more follow. The rows are
   * read by position once their keys are known, with the metadata of the payment each belongs to.
   */
  async listFiltered(projectId: string, f: TransactionFilter, page: { limit: number; offset: number; cursor?: Cursor }): Promise<{ rows: ListedRow[]; hasMore: boolean }> {
    if (isEmptyRange(f)) return { rows: [], hasMore: false };
    const query = rowsOfKeys(pageKeys(projectId, f, page.cursor, page.limit, page.offset, this.dialect), projectId).compile(this.db);
    // A time range alone is planned for its values on every call: one range plans quickly, and without the
    // limit's value its generic plan would sort the whole table.
    const prepared = this.dialect === "postgres" && !f.timeRangeOnly;
    const rows = prepared ? await this.run(`aw_transaction_page_${pairsOf(f).length}_pairs`, query) : (await this.db.executeQuery(query)).rows;
    return { rows: rows.slice(0, page.limit), hasMore: rows.length > page.limit };
  }

  /** An unfiltered page after a cursor: the positions below the cursor's, newest first (the plain list's order). */
  async listBefore(projectId: string, pos: number, limit: number): Promise<{ rows: ListedRow[]; hasMore: boolean }> {
    const query = sql<ListedRow>`
      select ${LISTED_COLUMNS}
      from transactions t
      left join payments p on p.id = t.payment_id
      where t.project_id = ${projectId} and t.pos < ${pos}
      order by t.pos desc
      limit ${limit + 1}`.compile(this.db);
    const rows = await this.run("aw_transaction_page_before", query);
    return { rows: rows.slice(0, limit), hasMore: rows.length > limit };
  }

  /**
   * How many transactions match the filter (all pages): the sum of the per-day counters that triggers keep
   * (migration 0008 on SQLite, 0025 on PostgreSQL) for the whole days inside the range, and an index count
   * of the rows of its edge days. An edge day is counted from its smaller side: the part inside the range when
   * that is at most half the day, else the day's counter less the part outside it, so no edge reads more than
   * half a day's rows.
   */
  async countFiltered(projectId: string, f: TransactionFilter): Promise<number> {
    if (isEmptyRange(f)) return 0;
    const pg = this.dialect === "postgres";
    // On PostgreSQL the lists are array values, so that the text depends only on which bounds are given: one
    // prepared statement per shape, whatever the filter.
    const oneOf = (column: "type" | "status", values: readonly string[]) => (pg ? sql`${sql.ref(column)} = any(${values}::text[])` : sql`${sql.ref(column)} in (${sql.join(values)})`);
    // A time range alone is counted on (project_id, created_at, pos), without the lists of every pair.
    const timeOnly = f.timeRangeOnly === true;
    /** The matching rows from `from` (inclusive or not) up to `to` (exclusive, or inclusive with `toInclusive`). */
    const countRows = (from: string | undefined, fromInclusive: boolean, to: string | undefined, toInclusive = false) => {
      const range = [
        ...(from !== undefined ? [fromInclusive ? sql`created_at >= ${from}` : sql`created_at > ${from}`] : []),
        ...(to !== undefined ? [toInclusive ? sql`created_at <= ${to}` : sql`created_at < ${to}`] : []),
      ];
      if (timeOnly) return sql`(select count(*) from transactions where ${sql.join([sql`project_id = ${projectId}`, ...range], sql` and `)})`;
      if (pg) {
        // One index-only range per (type, status) pair. With both lists as `= any`, the planner may read the edge day
        // on (project_id, created_at, pos) and test each row's type and status in the table: 5 ms for 2,700 rows.
        const pairs = sql`(select distinct unnest(${f.types}::text[]) as type) as ty cross join (select distinct unnest(${f.statuses}::text[]) as status) as st`;
        const inPair = sql`transactions.project_id = ${projectId} and transactions.type = ty.type and transactions.status = st.status`;
        return sql`(select coalesce(sum(edge.n), 0) from ${pairs} cross join lateral (select count(*) as n from transactions where ${sql.join([inPair, ...range], sql` and `)}) as edge)`;
      }
      return sql`(select count(*) from transactions where ${sql.join([sql`project_id = ${projectId}`, oneOf("type", f.types), oneOf("status", f.statuses), ...range], sql` and `)})`;
    };
    const counters = (days: RawBuilder<unknown>[]) =>
      sql`(select coalesce(sum(n), 0) from transaction_counts where ${sql.join([sql`project_id = ${projectId}`, ...days, oneOf("type", f.types), oneOf("status", f.statuses)], sql` and `)})`;
    const dayA = f.createdAfter?.slice(0, 10);
    const dayB = f.createdBefore?.slice(0, 10);
    // Each part of the sum, and its shape in the prepared statement's name.
    const parts: { shape: string; count: RawBuilder<unknown> }[] = [];
    if (dayA !== undefined && dayA === dayB) {
      // One day: the rows between the bounds, or the day less the rows outside them.
      const a = f.createdAfter!;
      const b = f.createdBefore!;
      if (Date.parse(b) - Date.parse(a) <= HALF_DAY_MS) parts.push({ shape: "one_day", count: countRows(a, false, b) });
      else parts.push({ shape: "one_day_outside", count: sql`${counters([sql`day = ${dayA}`])} - ${countRows(dayA, true, a, true)} - ${countRows(b, true, nextDay(dayA))}` });
    } else {
      parts.push({ shape: "", count: counters([...(dayA !== undefined ? [sql`day > ${dayA}`] : []), ...(dayB !== undefined ? [sql`day < ${dayB}`] : [])]) });
      if (dayA !== undefined) {
        // The first day's rows after the lower bound.
        const a = f.createdAfter!;
        if (msIntoDay(a) >= HALF_DAY_MS) parts.push({ shape: "after", count: countRows(a, false, nextDay(dayA)) });
        else parts.push({ shape: "after_outside", count: sql`${counters([sql`day = ${dayA}`])} - ${countRows(dayA, true, a, true)}` });
      }
      if (dayB !== undefined) {
        // The last day's rows before the upper bound.
        const b = f.createdBefore!;
        if (msIntoDay(b) <= HALF_DAY_MS) parts.push({ shape: "before", count: countRows(dayB, true, b) });
        else parts.push({ shape: "before_outside", count: sql`${counters([sql`day = ${dayB}`])} - ${countRows(b, true, nextDay(dayB))}` });
      }
    }
    // One statement, one round trip.
    const query = sql<{ n: number | string }>`select ${sql.join(parts.map((p) => p.count), sql` + `)} as n`.compile(this.db);
    const shape = parts.map((p) => p.shape).filter((s) => s !== "").join("_") || "all";
    const rows = await this.run(`aw_transaction_count_${timeOnly ? "time" : "pairs"}_${shape}`, query);
    return Number(rows[0]?.n ?? 0);
  }

  /** One transaction of the project with its payment's or deposit's details, or undefined. */
  async detail(projectId: string, id: string): Promise<DetailRow | undefined> {
    const { rows } = await sql<DetailRow>`
      select t.id, t.type, t.status, t.amount, t.currency, t.description, t.merchant_name, t.created_at, t.completed_at, t.payment_id,
        case when p.id = t.id then p.metadata end as metadata, case when p.id = t.id then p.rail_state end as rail_state,
        p.rail, p.recipient, p.recipient_json, p.tx_hash as payment_tx_hash, p.fee_txn_id, p.failure_code, p.failure_reason,
        d.tx_hash as deposit_tx_hash,
        case when p.id = t.id then p.approval end as approval, p.approval_until, p.approval_decided_at,
        p.approval_decided_by, p.approval_decided_by_name, p.approval_reason
      from transactions t
      left join payments p on p.id = t.payment_id
      left join deposits d on d.txn_id = t.id
      where t.id = ${id} and t.project_id = ${projectId}`.execute(this.db);
    return rows[0];
  }

  /** The position of a transaction of the project (for a cursor), or undefined. */
  async cursorOf(projectId: string, id: string): Promise<Cursor | undefined> {
    const [row] = await this.run("aw_transaction_cursor", this.db.selectFrom("transactions").select(["created_at", "pos"]).where("id", "=", id).where("project_id", "=", projectId).compile());
    return row && row.pos !== null ? { createdAt: row.created_at, pos: Number(row.pos) } : undefined;
  }

  /** A transaction of the project as its history starts (the console's timeline), or undefined. */
  history(projectId: string, id: string) {
    return this.db.selectFrom("transactions").select(["type", "status", "created_at", "completed_at", "payment_id"]).where("id", "=", id).where("project_id", "=", projectId).executeTakeFirst();
  }

  /** The status transitions recorded for a payment or deposit of the project (what its webhooks report), oldest first. */
  statusHistory(projectId: string, objectId: string) {
    return this.db.selectFrom("status_history").select(["type", "status", "at"]).where("object_id", "=", objectId).where("project_id", "=", projectId).orderBy("seq").execute();
  }

  /** The deposit of the project that is (or, while seen, will become) transaction `txnId`, or undefined. */
  depositOf(projectId: string, txnId: string) {
    return this.db.selectFrom("deposits").selectAll().where("txn_id", "=", txnId).where("project_id", "=", projectId).executeTakeFirst();
  }
}

function isEmptyRange(f: TransactionFilter): boolean {
  return f.createdAfter !== undefined && f.createdBefore !== undefined && f.createdAfter >= f.createdBefore;
}

/** An edge day's part of at most this long is counted row by row; a longer one, as the day's counter less the rest. */
const HALF_DAY_MS = 43_200_000;

/** Milliseconds from the start of its UTC day to `iso` (a stored time, `Date#toISOString`). */
function msIntoDay(iso: string): number {
  return Date.parse(iso) - Date.parse(`${iso.slice(0, 10)}T00:00:00.000Z`);
}

/** `YYYY-MM-DD` of the day after. */
function nextDay(day: string): string {
  return new Date(Date.parse(`${day}T00:00:00.000Z`) + 86_400_000).toISOString().slice(0, 10);
}
