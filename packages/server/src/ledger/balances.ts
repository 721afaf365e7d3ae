/**
 * Balances and the plain reads of a project's transactions: its balance row, its count and pages of
 * transactions, its spend per day, and every project's balance for reconciliation. A Ledger's `balances`
 * (the filtered and cursor pages are its `transactions`: transactionReads.ts).
 */
import { sql } from "kysely";
import { type Db, type Dialect, type PgDirect, runNamed, withParameters } from "./db.ts";
import type { ListedRow } from "./transactionReads.ts";

/** A row of a plain page as PostgreSQL reads it with the count: no transaction's columns when the page is empty. */
type ListedPageRow = Omit<ListedRow, "id" | "payment_id"> & { total: number; id: string | null };

/** A project's wallet and balance as reconciliation reads them. */
type WalletBalance = { id: string; wallet_address: string | null; available_micros: number; held_micros: number; pending_micros: number; open_payments: number };

const compileBalanceQuery = (db: Db) =>
  db
    .selectFrom("balances")
    .innerJoin("projects", "projects.id", "balances.project_id")
    .select(["balances.available_micros", "balances.held_micros", "balances.pending_micros", "balances.total_funded_micros", "balances.total_spent_micros", "balances.tx_count", "projects.wallet_address"])
    .where("balances.project_id", "=", "")
    .compile();

/** PostgreSQL's plain page: the count and the page in one statement (listTransactionsAtOnce); parameters offset, offset + limit, limit, project. */
const compilePageQuery = (db: Db) =>
  sql<ListedPageRow>`
      select b.tx_count as total, t.id, t.type, t.status, t.amount, t.currency, t.description, t.merchant_name, t.created_at, t.completed_at,
        p.failure_code, p.failure_reason, case when p.id = t.id then p.metadata end as metadata
      from balances b
      left join lateral (
        select * from transactions
        where project_id = b.project_id and pos <= b.tx_count - ${0} and pos > b.tx_count - ${0}
        order by pos desc limit ${0}) as t on true
      left join payments p on p.id = t.payment_id
      where b.project_id = ${""}
      order by t.pos desc`.compile(db);

export class Balances {
  /** Read on every GET /v1/balance, compiled once: building SQL costs more than running it. */
  private readonly balanceQuery: ReturnType<typeof compileBalanceQuery>;
  private pageQuery?: ReturnType<typeof compilePageQuery>;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    /** PostgreSQL: the balance and the plain page run as prepared statements, planned once per connection. */
    private readonly pg?: PgDirect,
  ) {
    this.balanceQuery = compileBalanceQuery(db);
  }

  async get(projectId: string) {
    const query = this.statement(projectId);
    return (await runNamed(this.db, this.pg, "aw_balance", query))[0];
  }

  /** The balance read as a statement, for a write that reads it in its own transaction (a hold refused for funds). */
  statement(projectId: string) {
    return withParameters(this.balanceQuery, [projectId]);
  }

  /** The project's number of transactions (kept on its balance row). */
  async transactionCount(projectId: string): Promise<number> {
    const query = this.db.selectFrom("balances").select("tx_count").where("project_id", "=", projectId).compile();
    const [balance] = await runNamed(this.db, this.pg, "aw_transaction_count", query);
    return Number(balance?.tx_count ?? 0);
  }

  /**
   * Newest first. The count N is read first; the page is positions (N - offset - limit, N - offset],
   * so a transaction recorded meanwhile (position > N) cannot shift the page, and any depth costs
   * the same: an index range of `limit` rows. PostgreSQL reads the count and the page in one statement.
   */
  async listTransactions(projectId: string, limit: number, offset: number) {
    if (this.dialect === "postgres") return this.listTransactionsAtOnce(projectId, limit, offset);
    const balance = await this.db.selectFrom("balances").select("tx_count").where("project_id", "=", projectId).executeTakeFirst();
    const total = balance?.tx_count ?? 0;
    const top = total - offset;
    if (top <= 0) return { rows: [], total };
    // A failed or reversed transaction shows its payment's reason, and the payment's own row (its id is
    // the payment's) its metadata: one primary-key lookup per row of the page.
    const rows = await this.db
      .selectFrom("transactions as t")
      .leftJoin("payments as p", "p.id", "t.payment_id")
      .select(["t.id", "t.type", "t.status", "t.amount", "t.currency", "t.description", "t.merchant_name", "t.created_at", "t.completed_at", "p.failure_code", "p.failure_reason"])
      .select(sql<string | null>`case when p.id = t.id then p.metadata end`.as("metadata"))
      .where("t.project_id", "=", projectId)
      .where("t.pos", "<=", top)
      .where("t.pos", ">", top - limit)
      .orderBy("t.pos", "desc")
      .execute();
    return { rows, total };
  }

  /**
   * PostgreSQL: the count and the page in one statement, one round trip to the server instead of two; the
   * same index range, its bounds taken from the balance row the statement reads (so from one snapshot).
   */
  private async listTransactionsAtOnce(projectId: string, limit: number, offset: number) {
    const query = withParameters((this.pageQuery ??= compilePageQuery(this.db)), [offset, offset + limit, limit, projectId]);
    const rows = await runNamed(this.db, this.pg, "aw_transaction_page", query);
    const total = rows[0]?.total ?? 0;
    return { rows: rows.filter((r): r is ListedPageRow & { id: string } => r.id !== null).map(({ total: _, ...row }) => row), total };
  }

  /**
   * Spend per UTC day and payment type since a day ("YYYY-MM-DD"), counting payments that are open or
   * completed (what left or is leaving), for the console's chart. An index range on (project, created_at).
   */
  async spendByDay(projectId: string, sinceDay: string) {
    const rows = await this.db
      .selectFrom("transactions")
      .select((eb) => [sql<string>`substr(created_at, 1, 10)`.as("day"), "type", "currency", eb.fn.sum<number>("amount").as("amount")])
      .where("project_id", "=", projectId)
      .where("created_at", ">=", sinceDay)
      .where("type", "in", ["payment", "x402_payment", "usdc_transfer"])
      .where("status", "in", ["pending", "processing", "completed"])
      .groupBy([sql`substr(created_at, 1, 10)`, "type", "currency"])
      .execute();
    return rows.map((r) => ({ day: r.day, type: r.type, currency: r.currency, amount: Number(r.amount) }));
  }

  /**
   * Every project's wallet and balance, oldest project first, with its number of open (pending or
   * processing) payments: what `reconcile` compares with the chain.
   */
  async ofWallets(): Promise<WalletBalance[]> {
    const balances = await this.db
      .selectFrom("projects")
      .innerJoin("balances", "balances.project_id", "projects.id")
      .select(["projects.id", "projects.wallet_address", "balances.available_micros", "balances.held_micros", "balances.pending_micros"])
      .orderBy("projects.created_at")
      .orderBy("projects.id")
      .execute();
    const open = await this.db
      .selectFrom("payments")
      .select(["project_id", (eb) => eb.fn.countAll<number>().as("n")])
      .where("status", "in", ["pending", "processing"])
      .groupBy("project_id")
      .execute();
    const openBy = new Map(open.map((o) => [o.project_id, Number(o.n)]));
    return balances.map((b) => ({ ...b, open_payments: openBy.get(b.id) ?? 0 }));
  }
}
