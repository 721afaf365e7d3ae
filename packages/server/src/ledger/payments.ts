/**
 * The ledger's payments: the hold, its resolution or reversal, their progress and leases, approvals and
 * refusals, with the hot writes' group commit (SQLite) and call batching (PostgreSQL). A member of the
 * `Ledger` (store.ts) like every other store: `ledger.payments.hold(…)`.
 *
 * Each public method is one database transaction; none of them does network I/O. Balance rows are a
 * cache of the journal, updated in the same transaction as the journal entries they summarise
 * (verify.ts proves it).
 *
 * Accounts of the journal (every movement's entries sum to zero):
 *   project:<id>:available  spendable funds           project:<id>:held  amount+fee of open payments
 *   world:chain             deposits' origin           world:payouts      money that left by a rail
 *   revenue:fees            platform fees earned
 */
import { CompiledQuery, type Insertable, sql } from "kysely";
import { type Db, type Dialect, withParameters } from "./db.ts";
import type { AtomicWrites, Steps } from "./atomicWrites.ts";
import type { Balances } from "./balances.ts";
import { type Entry, journalRows, journalStatement } from "./journal.ts";
import { type PgHolds, createPgHolds } from "./pgHolds.ts";
import { type PgResolves, createPgResolves } from "./pgResolves.ts";
import type { FailureCode } from "./failureCodes.ts";
import { account } from "./accounts.ts";
import type { Database } from "./schema.ts";
import { type PaymentRow, toPayment, toRowPatch } from "./paymentRows.ts";
import { countedAmount } from "./spendDays.ts";
import { type HoldControls, type Refusal, type SpendWindow, type WindowKey, type WindowKind, WINDOW_KINDS, countedWindows, judgeStatic, windowBounds, windowRefusal, windowVerdict } from "../domain/spending.ts";
import type { Payment, PaymentPatch } from "../domain/payment.ts";
import type { Clock, IdGenerator } from "../ids.ts";
import type { Actor } from "../domain/audit.ts";
import { auditInsert } from "./auditLog.ts";

type TransactionRow = Insertable<Database["transactions"]>;

export type NewPayment = {
  projectId: string;
  rail: Payment["rail"];
  railTxnType: "payment" | "x402_payment" | "usdc_transfer";
  amountUnits: number;
  feeUnits: number;
  amountMicros: number;
  feeMicros: number;
  currency: "usd" | "usdc";
  recipient: string;
  recipientJson: string | null;
  merchantName: string | null;
  description: string | null;
  idempotencyKey: string | null;
  railState: unknown;
  estimatedArrival?: string | null;
  /** The caller's string tags, stored as given and never interpreted. */
  metadata?: Record<string, string> | null;
  /** `processing` when the rail's first step is already done (and recorded in railState); default pending. */
  status?: "pending" | "processing";
  /** The creating request owns the payment until then; a repeat of its key gets 409 meanwhile. */
  inFlightUntil: string;
  leaseOwner: string;
  /** Until when `leaseOwner` alone may advance the payment (default: inFlightUntil). */
  leaseUntil?: string;
  /**
   * The spending controls of the paying token and its project, judged by the hold in its own write
   * (spending.ts). None: the payment is bounded by the balance alone.
   */
  controls?: HoldControls & { approvalTimeoutMs: number };
  /** The paying token, recorded on the payment whether or not it has controls (a limit set later counts its payments). */
  tokenId?: string | null;
  /** The paying token's ancestors, nearest first: the payment counts in their windows too (nested budgets). */
  ancestorTokenIds?: readonly string[];
};

/** A lease given back: when the payment is next due, and after a failed step its count of failed steps. */
export type LeaseRelease = { id: string; nextAttemptAt: string; stepErrors?: number };

/**
 * What a resolution stores besides the outcome. A failure gives its code (failureCodes.ts) and its
 * human message (`failureReason`, shown as `failure_message`); either is left as it was when omitted. `railState`,
 * when given, replaces the rail's state in the same write (a completed leg's transfer logs, in its `completed` record).
 */
export type ResolveExtra = { txHash?: string | null; failureReason?: string | null; failureCode?: FailureCode | null; responseJson?: string | null; railState?: string };

export type HoldResult =
  | { kind: "held"; payment: Payment }
  | { kind: "duplicate"; payment: Payment }
  | { kind: "insufficient"; availableMicros: number }
  | { kind: "refused"; refusal: Refusal };

/** The refusal log keeps the newest this many rows (all projects together); older ones are deleted as new ones come. */
export const REFUSALS_KEPT_MAX = 10_000;

/** Thrown inside a hold's write so that it rolls back (the debit and any counter moved), answered as a value. */
class WindowRefused extends Error {
  /** `index`: the refusing window's place among the hold's limited windows. */
  constructor(readonly refusal: Refusal, readonly index: number) {
    super(refusal.detail);
  }
}

function isUniqueViolation(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  return e?.code === "23505" || e?.code === "SQLITE_CONSTRAINT_UNIQUE" || /UNIQUE constraint failed/.test(e?.message ?? "");
}

/** The hold's conditional debit, compiled once; `bind` gives it one hold's values. */
function compileDebit(db: Db) {
  // Marker values stand where each hold's own go; Kysely passes parameters through untouched.
  const TOTAL = Symbol("total");
  const PROJECT = Symbol("project");
  const q = db
    .updateTable("balances")
    .set((eb) => ({
      available_micros: eb("available_micros", "-", TOTAL as never),
      held_micros: eb("held_micros", "+", TOTAL as never),
      total_spent_micros: eb("total_spent_micros", "+", TOTAL as never),
      tx_count: eb("tx_count", "+", 2),
    }))
    .where("project_id", "=", PROJECT as never)
    .where("available_micros", ">=", TOTAL as never)
    .returning(["available_micros", "tx_count"])
    .compile();
  return (projectId: string, total: number) => withParameters(q, q.parameters.map((v) => (v === TOTAL ? total : v === PROJECT ? projectId : v)));
}

/**
 * `insert into "table" (columns of the first row) values (…), (…)` for rows with the same keys in
 * the same order, as Kysely writes it for SQLite, its text built once per shape: building the
 * statement through the query builder cost more than running it on the hold's path.
 */
const insertTexts = new Map<string, string>();
function insertRows(table: string, rows: readonly object[]): CompiledQuery {
  const columns = Object.keys(rows[0]!);
  const shape = `${table}|${rows.length}|${columns.join(",")}`;
  let text = insertTexts.get(shape);
  if (!text) {
    const row = `(${columns.map(() => "?").join(", ")})`;
    text = `insert into "${table}" (${columns.map((c) => `"${c}"`).join(", ")}) values ${rows.map(() => row).join(", ")}`;
    insertTexts.set(shape, text);
  }
  const parameters: unknown[] = [];
  for (const r of rows) {
    const values = Object.values(r);
    // Kysely would leave out an undefined column; here every row must give every column (null for none).
    if (values.length !== columns.length || values.includes(undefined)) throw new Error(`insert into ${table}: rows of different shapes or an undefined value`);
    parameters.push(...values);
  }
  return CompiledQuery.raw(text, parameters);
}

export class Payments {
  private readonly debitQuery: ReturnType<typeof compileDebit>;
  /** PostgreSQL: the holds of one project asked for together are one call (pgHolds.ts); so are resolutions (pgResolves.ts). */
  private readonly pgHolds: PgHolds | undefined;
  private readonly pgResolves: PgResolves | undefined;

  constructor(
    private readonly db: Db,
    private readonly dialect: Dialect,
    private readonly clock: Clock,
    private readonly newId: IdGenerator,
    /** SQLite: the hot writes share commits (groupCommit.ts); PostgreSQL runs them as transactions. */
    private readonly writes: AtomicWrites,
    /** The hold reads the balance it could not debit (its `insufficient` answer). */
    private readonly balances: Balances,
  ) {
    this.debitQuery = compileDebit(db);
    this.pgHolds = dialect === "postgres" ? createPgHolds(db) : undefined;
    this.pgResolves = dialect === "postgres" ? createPgResolves(db) : undefined;
  }

  private now(): string {
    return this.clock().toISOString();
  }

  // ---------------------------------------------------------------------------------------------
  // Payments: hold → post | void, and reverse after completion


  async findPaymentByKey(projectId: string, key: string): Promise<Payment | undefined> {
    return maybe(await this.db.selectFrom("payments").selectAll().where("project_id", "=", projectId).where("idempotency_key", "=", key).executeTakeFirst());
  }

  async getPayment(id: string): Promise<Payment | undefined> {
    return maybe(await this.db.selectFrom("payments").selectAll().where("id", "=", id).executeTakeFirst());
  }

  /** Completed x402 payments completed at or after `since`, newest first (the partial index of migration 0016). */
  async recentCompletedX402(since: Date, limit: number): Promise<Payment[]> {
    const rows = await this.db
      .selectFrom("payments")
      .selectAll()
      .where("rail", "=", "x402")
      .where("status", "=", "completed")
      .where("completed_at", ">=", since.toISOString())
      .orderBy("completed_at", "desc")
      .limit(limit)
      .execute();
    return rows.map(toPayment);
  }

  /** How many payments are open (pending or processing), of every project. */
  async openPaymentCount(): Promise<number> {
    const row = await this.db.selectFrom("payments").select((eb) => eb.fn.countAll<number>().as("n")).where("status", "in", ["pending", "processing"]).executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** The payment a fiat provider knows by `providerRef` (its payout id), or undefined. */
  async paymentByProviderRef(providerRef: string): Promise<Payment | undefined> {
    return maybe(await this.db.selectFrom("payments").selectAll().where("provider_ref", "=", providerRef).executeTakeFirst());
  }

  /**
   * Up to `limit` open bank payments whose account number is still in the clear, awaiting their payout: rows
   * written before migration 0023, which a process holding the key seals (deps.ts).
   */
  async openBankRecipientsInClear(limit: number): Promise<Pick<Payment, "id" | "projectId" | "recipientJson">[]> {
    const rows = await this.db
      .selectFrom("payments")
      .select(["id", "project_id", "recipient_json"])
      .where("rail", "=", "fiat")
      .where("status", "in", ["pending", "processing"])
      .where("provider_ref", "is", null)
      .where("recipient_json", "not like", "%account_sealed%")
      .where("recipient_json", "not like", '%"account_number":"****%')
      .limit(limit)
      .execute();
    return rows.map((r) => ({ id: r.id, projectId: r.project_id, recipientJson: r.recipient_json }));
  }

  /** Replaces a payment's stored recipient if it is still `before` (a compare-and-set). */
  async replaceRecipientJson(id: string, before: string, after: string): Promise<boolean> {
    const r = await this.db.updateTable("payments").set({ recipient_json: after }).where("id", "=", id).where("recipient_json", "=", before).executeTakeFirst();
    return Number(r.numUpdatedRows) > 0;
  }

  /** Makes a payment due at `at` (the worker advances it then), leaving its lease and the rest as they are. */
  async makePaymentDue(id: string, at: string): Promise<void> {
    await this.db.updateTable("payments").set({ next_attempt_at: at }).where("id", "=", id).execute();
  }

  /** The `limit` most recently completed payments that record a rail state (their relayed legs), newest first. */
  async recentCompletedWithRailState(limit: number): Promise<Payment[]> {
    return (await this.db.selectFrom("payments").selectAll().where("status", "=", "completed").where("rail_state", "is not", null).orderBy("completed_at", "desc").limit(limit).execute()).map(toPayment);
  }

  /** The completed payments carried by the transaction `txHash`. */
  async completedPaymentsOfTx(txHash: string): Promise<Payment[]> {
    return (await this.db.selectFrom("payments").selectAll().where("tx_hash", "=", txHash).where("status", "=", "completed").execute()).map(toPayment);
  }

  /**
   * Phase one: debit amount + fee from available into held with a conditional update (never
   * read-then-write), create the rail and fee transactions as `pending`, and record the payment
   * with its idempotency key, all in one transaction.
   */
  async hold(input: NewPayment): Promise<HoldResult> {
    const total = input.amountMicros + input.feeMicros;
    if (!(Number.isSafeInteger(total) && total > 0)) throw new Error(`hold of invalid amount ${total}`);
    // One instant for the windows and the payment's created_at, so a window's sum and its counter agree.
    const now = this.clock();
    let windows: SpendWindow[] = [];
    let approval = false;
    if (input.controls) {
      const judged = judgeStatic(input.controls, input.projectId, input.rail, input.amountMicros, now);
      if (judged.kind === "refused") return this.refuse(input, judged.refusal);
      windows = judged.windows;
      approval = judged.approval;
    }
    const tokenId = input.tokenId ?? input.controls?.tokenId ?? null;
    const counted = countedWindows(tokenId === null ? [] : [tokenId, ...(input.ancestorTokenIds ?? input.controls?.ancestors?.map((a) => a.tokenId) ?? [])], input.projectId, now);
    const plan = this.holdPlan(input, total, counted, tokenId, approval, now, admittedJson(input, windows, approval));
    const balances = this.balances;
    const amount = input.amountMicros;
    try {
      if (this.pgHolds) {
        // PostgreSQL: one call, with the other holds of the project asked for meanwhile (pgHolds.ts).
        const o = await this.pgHolds.hold(input.projectId, {
          totalMicros: total,
          amountMicros: amount,
          windows: windows.map((w) => ({ scope_id: w.scopeId, kind: w.kind, start: w.start, limit: w.limitMicros, token_id: w.scope === "token" ? w.scopeId : null, ...windowBounds(w.kind, w.start) })),
          counted,
          payment: plan.payment,
          transactions: plan.transactions,
          journal: plan.journal,
        });
        if (o.held) return { kind: "held", payment: toPayment(plan.payment) };
        if ("windowIndex" in o) return this.refuse(input, windowRefusal(windows[o.windowIndex]!, o.spentMicros, amount));
        return { kind: "insufficient", availableMicros: o.availableMicros };
      }
      return await this.writes.atomically(function* (): Steps<HoldResult> {
        const debited = (yield plan.debit)[0] as { tx_count: number } | undefined;
        if (!debited) {
          const balance = (yield balances.statement(input.projectId))[0] as { available_micros: number } | undefined;
          return { kind: "insufficient", availableMicros: balance?.available_micros ?? 0 };
        }
        // Every existing counter of the payment's windows takes the amount, in one statement that answers the
        // limited windows' counters as they now are. Each limited window must have taken it within its limit: one
        // without a row yet (its first hold) is written from the ledger's sum, then takes the amount. A refusal
        // throws, and the write's savepoint undoes the debit and every counter moved.
        if (windows.length === 0) yield countInWindows(counted, amount);
        else {
          const moved = (yield countInWindows(counted, amount, true)) as CounterRow[];
          for (const [i, w] of windows.entries()) {
            const row = moved.find((r) => r.scope_id === w.scopeId && r.kind === w.kind && r.window_start === w.start);
            const spent = row ? Number(row.spent_micros) : yield* seedAndCount(w, counted, input.projectId, amount);
            const refusal = windowVerdict(w, spent - amount, amount);
            if (refusal) throw new WindowRefused(refusal, i);
          }
        }
        for (const q of plan.records(Number(debited.tx_count))) yield q;
        return { kind: "held", payment: toPayment(plan.payment) };
      });
    } catch (err) {
      if (err instanceof WindowRefused) {
        // The refusal rolled the hold back, seeds included; keep the counters judged up to the refusing one, as
        // PostgreSQL's function does: each equals its window's sum, and the next hold need not sum it again.
        const judged = windows.slice(0, err.index + 1);
        await this.writes.atomically(function* (): Steps<void> {
          for (const w of judged) yield windowSeed(w, input.projectId);
        });
        return this.refuse(input, err.refusal);
      }
      if (isUniqueViolation(err) && input.idempotencyKey !== null) {
        const existing = await this.findPaymentByKey(input.projectId, input.idempotencyKey);
        if (existing) return { kind: "duplicate", payment: existing };
      }
      throw err;
    }
  }

  /** A hold a control refused: nothing of it was written but its line in the refusal log. */
  private async refuse(input: NewPayment, refusal: Refusal): Promise<HoldResult> {
    await this.recordRefusal({ projectId: input.projectId, tokenId: input.controls?.tokenId ?? null, rail: input.rail, recipient: input.recipient, amountMicros: input.amountMicros, refusal });
    return { kind: "refused", refusal };
  }

  /**
   * Logs a refused payment attempt (no money moved) and deletes what falls beyond the newest
   * REFUSALS_KEPT_MAX, in one write.
   */
  async recordRefusal(r: { projectId: string; tokenId: string | null; rail: string; recipient: string; amountMicros: number | null; refusal: Refusal }): Promise<void> {
    const db = this.db;
    const l = r.refusal.limit;
    // A limit's amount asked is the payment's: one column holds it.
    if (l && l.amountMicros !== r.amountMicros) throw new Error(`a limit refusal of ${l.amountMicros} recorded for a payment of ${r.amountMicros}`);
    const measured = { rule: l?.rule ?? null, rule_level: l?.level ?? null, rule_owner_id: l?.ownerId ?? null, limit_micros: l?.limitMicros ?? null, spent_micros: l?.spentMicros ?? null, remaining_micros: l?.remainingMicros ?? null };
    const row = { project_id: r.projectId, token_id: r.tokenId, code: r.refusal.code, detail: r.refusal.detail, rail: r.rail, recipient: r.recipient.slice(0, 500), amount_micros: r.amountMicros, created_at: this.now(), ...measured };
    await this.writes.atomically(function* (): Steps<void> {
      const [inserted] = (yield db.insertInto("spending_refusals").values(row).returning("seq").compile()) as { seq: number }[];
      yield db.deleteFrom("spending_refusals").where("seq", "<=", Number(inserted!.seq) - REFUSALS_KEPT_MAX).compile();
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Approvals: a held payment above its token's threshold waits (`approval = awaiting`), leased to
  // nobody and due when its approval runs out. A decision is one conditional write on the row, so an
  // approval and a denial or the timeout never both take effect; the worker does the rest (resumes an
  // approved payment, fails a denied or expired one with its code), also after a restart.

  /**
   * Records a person's decision on an awaiting payment, with who decided (`by`) and when: approved (due at
   * once), or denied. An approval after the payment's time ran out changes nothing. Returns the row, or
   * undefined if it was not awaiting. With an actor, the decision's audit entry is written in the same write
   * (`by` and its name are the actor's), with the reason given.
   */
  async decideApproval(id: string, decision: "approved" | "denied", by: string | null = null, opts: { actor?: Actor; reason?: string | null } = {}): Promise<Payment | undefined> {
    const now = this.now();
    const { actor, reason = null } = opts;
    let q = this.db
      .updateTable("payments")
      .set({ approval: decision, updated_at: now, next_attempt_at: now, approval_decided_by: by, approval_decided_at: now, approval_decided_by_name: actor?.name ?? null, approval_reason: reason })
      .where("id", "=", id)
      .where("approval", "=", "awaiting")
      .where("status", "=", "pending");
    if (decision === "approved") q = q.where("approval_until", ">", now);
    const db = this.db;
    const row = await this.writes.atomically(function* (): Steps<PaymentRow | undefined> {
      const [r] = (yield q.returningAll().compile()) as PaymentRow[];
      if (r && actor) {
        const after = { approval: decision, reason, amount_micros: Number(r.amount_micros), recipient: r.rail === "fiat" ? "(bank account)" : r.recipient };
        yield auditInsert(db, actor, { action: "approval.decided", projectId: r.project_id, targetId: r.id, before: { approval: "awaiting" }, after }, now);
      }
      return r;
    });
    return maybe(row);
  }

  /** The worker's step for a payment that waits for approval; `handled: false` means the rail may advance it. */
  async settleApproval(p: Payment): Promise<{ handled: boolean; payment?: Payment }> {
    if (p.approval !== "awaiting" && p.approval !== "denied" && p.approval !== "expired") return { handled: false };
    if (p.approval === "awaiting") {
      // Not decided in time: expire it (conditional, so a concurrent approval or denial wins or loses whole).
      if ((p.approvalUntil ?? "") > this.now()) return { handled: true };
      const expired = await this.writes.writeOne(this.db.updateTable("payments").set({ approval: "expired", updated_at: this.now() }).where("id", "=", p.id).where("approval", "=", "awaiting").returningAll().compile());
      if (!expired[0]) return { handled: true };
      p = toPayment(expired[0]);
    }
    const denied = p.approval === "denied";
    const r = await this.resolve(p.id, "failed", {
      failureCode: denied ? "approval_denied" : "approval_expired",
      failureReason: denied ? "A person denied this payment; the amount and fee were credited back." : `Nobody approved this payment before ${p.approvalUntil}; the amount and fee were credited back.`,
    });
    return { handled: true, payment: r.payment };
  }

  /** A project's payments a person approved or denied, newest decision first. */
  async listDecidedApprovals(projectId: string, limit: number): Promise<Payment[]> {
    const rows = await this.db
      .selectFrom("payments")
      .selectAll()
      .where("approval", "in", ["approved", "denied"])
      .where("project_id", "=", projectId)
      .orderBy("approval_decided_at", "desc")
      .limit(limit)
      .execute();
    return rows.map(toPayment);
  }

  /** Payments waiting for a person, oldest first. */
  async listAwaitingApprovals(opts: { projectId?: string; limit: number }): Promise<Payment[]> {
    let q = this.db.selectFrom("payments").selectAll().where("approval", "=", "awaiting").where("status", "=", "pending").orderBy("created_at").limit(opts.limit);
    if (opts.projectId) q = q.where("project_id", "=", opts.projectId);
    return (await q.execute()).map(toPayment);
  }

  /**
   * What is spent in each window, in the order asked: its counter, or for a window without one the sum of
   * its payments in the ledger (what the window's first judged hold will write; 0 when `projectId` is not given).
   */
  async windowSpending(windows: { scopeId: string; kind: string; start: string; scope?: "token" | "project"; projectId?: string }[]): Promise<number[]> {
    if (windows.length === 0) return [];
    const rows = await this.db
      .selectFrom("spend_windows")
      .selectAll()
      .where((eb) => eb.or(windows.map((w) => eb.and([eb("scope_id", "=", w.scopeId), eb("kind", "=", w.kind), eb("window_start", "=", w.start)]))))
      .execute();
    return Promise.all(
      windows.map(async (w) => {
        const row = rows.find((r) => r.scope_id === w.scopeId && r.kind === w.kind && r.window_start === w.start);
        if (row || !w.projectId) return Number(row?.spent_micros ?? 0);
        // The window's sum from the day counters (spendDays.ts): the same payments, without reading them.
        const { from, to } = windowBounds(w.kind as WindowKind, w.start);
        // A token's window holds its descendants' payments too (nested budgets).
        const tokenIds = w.scope === "token" ? [w.scopeId, ...(await this.db.selectFrom("token_lineage").select("descendant_id").where("ancestor_id", "=", w.scopeId).execute()).map((r) => r.descendant_id)] : null;
        return countedAmount(this.db, w.projectId, tokenIds, from, to);
      }),
    );
  }

  /** The newest refusals, of one project or all, newest first; of a token, its own and every token's below it (rolled up). */
  listRefusals(opts: { projectId?: string; tokenId?: string; limit: number }) {
    let q = this.db.selectFrom("spending_refusals").selectAll().orderBy("seq", "desc").limit(opts.limit);
    if (opts.projectId) q = q.where("project_id", "=", opts.projectId);
    const tokenId = opts.tokenId;
    if (tokenId) q = q.where((eb) => eb.or([eb("token_id", "=", tokenId), eb("token_id", "in", eb.selectFrom("token_lineage").select("descendant_id").where("ancestor_id", "=", tokenId))]));
    return q.execute();
  }

  /**
   * The hold's rows — the payment, its two transactions and the journal movement — and, for the SQLite
   * batch, its statements: the conditional debit (its row gives the transactions' positions), then the
   * inserts (`records`). On PostgreSQL the rows go into one statement with the project's other holds
   * (pgHolds.ts).
   */
  private holdPlan(input: NewPayment, total: number, counted: WindowKey[], tokenId: string | null, approval: boolean, now: Date, admitted: string | null) {
    const at = now.toISOString();
    // A payment awaiting approval belongs to no process: it is due when its approval runs out
    // (the worker then fails it), or at once when a person approves it.
    const approvalUntil = approval ? new Date(now.getTime() + input.controls!.approvalTimeoutMs).toISOString() : null;
    const id = this.newId("txn");
    const feeTxnId = this.newId("txn");
    const status = input.status ?? "pending";
    const debit = this.debitQuery(input.projectId, total);
    const payment: PaymentRow = {
      id,
      project_id: input.projectId,
      rail: input.rail,
      status,
      amount_units: input.amountUnits,
      fee_units: input.feeUnits,
      amount_micros: input.amountMicros,
      fee_micros: input.feeMicros,
      currency: input.currency,
      recipient: input.recipient,
      recipient_json: input.recipientJson,
      description: input.description,
      idempotency_key: input.idempotencyKey,
      fee_txn_id: feeTxnId,
      tx_hash: null,
      provider_ref: null,
      estimated_arrival: input.estimatedArrival ?? null,
      response_json: null,
      rail_state: input.railState === undefined ? null : JSON.stringify(input.railState),
      failure_reason: null,
      failure_code: null,
      step_errors: 0,
      in_flight_until: input.inFlightUntil,
      lease_owner: approvalUntil ? null : input.leaseOwner,
      lease_until: approvalUntil ? null : (input.leaseUntil ?? input.inFlightUntil),
      next_attempt_at: approvalUntil ?? input.leaseUntil ?? input.inFlightUntil,
      attempts: 0,
      created_at: at,
      updated_at: at,
      completed_at: null,
      metadata: input.metadata ? JSON.stringify(input.metadata) : null,
      token_id: tokenId,
      spend_windows: JSON.stringify(counted),
      approval: approvalUntil ? "awaiting" : null,
      approval_until: approvalUntil,
      approval_decided_by: null,
      approval_decided_at: null,
      approval_decided_by_name: null,
      approval_reason: null,
      return_checked_at: null,
      refund_tx_hash: null,
      admitted_json: admitted,
    };
    // Fee first so the rail transaction, inserted last, lists first among equal timestamps. Positions:
    // the rail transaction's is the debited count (`pos`), the fee's one less.
    const transactions: Omit<TransactionRow, "pos">[] = [
      { id: feeTxnId, project_id: input.projectId, payment_id: id, type: "platform_fee", status, amount: input.feeUnits, currency: input.currency, description: input.description === null ? null : `Fee: ${input.description}`.slice(0, 500), merchant_name: null, created_at: at, completed_at: null },
      { id, project_id: input.projectId, payment_id: id, type: input.railTxnType, status, amount: input.amountUnits, currency: input.currency, description: input.description, merchant_name: input.merchantName, created_at: at, completed_at: null },
    ];
    const journal = journalRows(this.newId, "hold", [
      { account: account.available(input.projectId), projectId: input.projectId, amountMicros: -total },
      { account: account.held(input.projectId), projectId: input.projectId, amountMicros: total },
    ], at);
    const records = (pos: number): CompiledQuery[] => [
      insertRows("payments", [namedColumns(payment)]),
      insertRows("transactions", transactions.map((t, i) => ({ ...t, pos: pos - (transactions.length - 1 - i) }))),
      insertRows("journal_entries", journal),
    ];
    return { debit, payment, transactions, journal, records };
  }

  /** Persists progress of an open payment (status pending → processing, hashes, rail state). */
  async updatePayment(id: string, patch: PaymentPatch): Promise<Payment> {
    const update = this.db.updateTable("payments").set({ ...toRowPatch(patch), updated_at: this.now() }).where("id", "=", id).returningAll().compile();
    const processing = patch.status === "processing" ? this.db.updateTable("transactions").set({ status: "processing" }).where("payment_id", "=", id).where("status", "=", "pending").compile() : undefined;
    if (!processing) {
      const row = (await this.writes.writeOne(update))[0];
      if (!row) throw new Error(`payment ${id} not found`);
      return toPayment(row);
    }
    return this.writes.atomically(function* (): Steps<Payment> {
      const row = (yield update)[0] as PaymentRow | undefined;
      if (!row) throw new Error(`payment ${id} not found`);
      yield processing;
      return toPayment(row);
    });
  }

  /**
   * Phase two: settle (post) or fail (void) an open payment. The conditional status update makes
   * it happen at most once whatever number of workers or requests race to resolve it.
   */
  async resolve(id: string, outcome: "completed" | "failed", extra: ResolveExtra = {}): Promise<{ changed: boolean; payment: Payment }> {
    const at = this.now();
    if (!this.pgResolves) return this.resolveAlone(id, outcome, extra, at);
    // PostgreSQL: one call with the other resolutions asked for meanwhile (pgResolves.ts).
    const o = await this.pgResolves.resolve({ id, outcome, at, movementId: this.newId("mov"), ...extra });
    if (o.changed) return { changed: true, payment: toPayment(o.payment) };
    const current = await this.getPayment(id);
    if (!current) throw new Error(`payment ${id} not found`);
    return { changed: false, payment: current };
  }

  /** SQLite: the resolution as one write of the group commit. */
  private resolveAlone(id: string, outcome: "completed" | "failed", extra: ResolveExtra, at: string): Promise<{ changed: boolean; payment: Payment }> {
    const db = this.db;
    const journal = (kind: string, entries: Entry[]) => journalStatement(this.db, this.newId, kind, entries, at);
    const finish = db
      .updateTable("payments")
      .set({
        status: outcome,
        updated_at: at,
        completed_at: outcome === "completed" ? at : null,
        lease_owner: null,
        lease_until: null,
        in_flight_until: null,
        ...(extra.txHash ? { tx_hash: extra.txHash } : {}),
        ...(extra.failureReason !== undefined ? { failure_reason: extra.failureReason } : {}),
        ...(extra.failureCode !== undefined ? { failure_code: extra.failureCode } : {}),
        ...(extra.responseJson !== undefined ? { response_json: extra.responseJson } : {}),
        ...(extra.railState !== undefined ? { rail_state: extra.railState } : {}),
      })
      .where("id", "=", id)
      .where("status", "in", ["pending", "processing"])
      .returningAll()
      .compile();
    return this.writes.atomically(function* (): Steps<{ changed: boolean; payment: Payment }> {
      const row = (yield finish)[0] as PaymentRow | undefined;
      if (!row) {
        const current = (yield db.selectFrom("payments").selectAll().where("id", "=", id).compile())[0] as PaymentRow | undefined;
        if (!current) throw new Error(`payment ${id} not found`);
        return { changed: false, payment: toPayment(current) };
      }
      const total = row.amount_micros + row.fee_micros;
      const p = row.project_id;
      if (outcome === "completed") {
        yield db.updateTable("balances").set((eb) => ({ held_micros: eb("held_micros", "-", total) })).where("project_id", "=", p).compile();
        yield journal("post", [
          { account: account.held(p), projectId: p, amountMicros: -total },
          { account: account.payouts, projectId: null, amountMicros: row.amount_micros },
          { account: account.fees, projectId: null, amountMicros: row.fee_micros },
        ]);
      } else {
        yield db
          .updateTable("balances")
          .set((eb) => ({
            held_micros: eb("held_micros", "-", total),
            available_micros: eb("available_micros", "+", total),
            total_spent_micros: eb("total_spent_micros", "-", total),
          }))
          .where("project_id", "=", p)
          .compile();
        yield journal("void", [
          { account: account.held(p), projectId: p, amountMicros: -total },
          { account: account.available(p), projectId: p, amountMicros: total },
        ]);
      }
      yield db.updateTable("transactions").set({ status: outcome, completed_at: outcome === "completed" ? at : null }).where("payment_id", "=", id).compile();
      return { changed: true, payment: toPayment(row) };
    });
  }

  /**
   * PostgreSQL: locks the balance row of the payment's project. Writes that change a payment and its
   * balance take the balance row first, as a hold does (it locks the balance, then inserts the payment,
   * whose unique idempotency key waits for any writer of a payment with the same key): in the other
   * order, a hold and a resolution of a payment with its key deadlocked (test/batchedWrites.test.ts).
   */
  private balanceLockOf(paymentId: string) {
    return this.db
      .selectFrom("balances")
      .select("project_id")
      .where("project_id", "=", (eb) => eb.selectFrom("payments").select("project_id").where("id", "=", paymentId))
      .forUpdate()
      .compile();
  }

  /**
   * A completed payment returned later (an ACH return): the amount is credited back, once; the fee stays
   * earned. The rail did its work, and the fee is on-chain in the treasury (swept when the payout
   * completed) while only the amount comes back to the wallet: crediting the fee too would show money
   * the wallet does not hold (decisions.md, "No fee refund on a return"). The fee transaction stays
   * `completed`; only the rail transaction becomes `reversed`. `reason` is the human message (the
   * return code and its meaning), `failureCode` the stable code shown beside it.
   */
  async reverse(id: string, reason: string, failureCode: FailureCode = "ach_returned"): Promise<boolean> {
    const at = this.now();
    const db = this.db;
    const journal = (entries: Entry[]) => journalStatement(db, this.newId, "reverse", entries, at);
    const lock = this.dialect === "postgres" ? this.balanceLockOf(id) : undefined;
    const reverse = db
      .updateTable("payments")
      .set({ status: "reversed", updated_at: at, failure_reason: reason, failure_code: failureCode })
      .where("id", "=", id)
      .where("status", "=", "completed")
      .returningAll()
      .compile();
    return this.writes.atomically(function* (): Steps<boolean> {
      if (lock) yield lock;
      const row = (yield reverse)[0] as PaymentRow | undefined;
      if (!row) return false;
      const p = row.project_id;
      yield db
        .updateTable("balances")
        .set((eb) => ({ available_micros: eb("available_micros", "+", row.amount_micros), total_spent_micros: eb("total_spent_micros", "-", row.amount_micros) }))
        .where("project_id", "=", p)
        .compile();
      yield journal([
        { account: account.payouts, projectId: null, amountMicros: -row.amount_micros },
        { account: account.available(p), projectId: p, amountMicros: row.amount_micros },
      ]);
      yield db.updateTable("transactions").set({ status: "reversed" }).where("id", "=", id).compile();
      return true;
    });
  }


  /**
   * Leases up to `max` due payments to `owner`: a compare-and-set lease per row, so two processes on one
   * database never work the same payment at once (the portable equivalent of SKIP LOCKED), all taken in
   * one atomic write. Payments with a step under way (`processing`) come first, then new ones
   * (`pending`), oldest due first in each: a backlog of new payments never starves those already sent.
   */
  async claimDuePayments(owner: string, leaseMs: number, max: number): Promise<Payment[]> {
    const now = this.now();
    const until = new Date(this.clock().getTime() + leaseMs).toISOString();
    const db = this.db;
    const due = (status: "pending" | "processing", limit: number) =>
      db
        .selectFrom("payments")
        .select("id")
        .where("status", "=", status)
        .where("next_attempt_at", "<=", now)
        .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)]))
        .orderBy("next_attempt_at")
        .limit(limit)
        .execute();
    const started = await due("processing", max);
    const ids = [...started, ...(started.length < max ? await due("pending", max - started.length) : [])].map((r) => r.id);
    if (ids.length === 0) return [];
    return this.writes.atomically(function* (): Steps<Payment[]> {
      const claimed: Payment[] = [];
      for (const id of ids) {
        const [row] = (yield db
          .updateTable("payments")
          .set({ lease_owner: owner, lease_until: until, attempts: sql`attempts + 1` })
          .where("id", "=", id)
          .where("status", "in", ["pending", "processing"])
          .where((eb) => eb.or([eb("lease_until", "is", null), eb("lease_until", "<", now)]))
          .returningAll()
          .compile()) as PaymentRow[];
        if (row) claimed.push(toPayment(row));
      }
      return claimed;
    });
  }

  /**
   * Releases several of `owner`'s leases, each with its next attempt (and, after a failed step, the
   * payment's count of failed steps), in one atomic write.
   */
  async releaseLeases(leases: LeaseRelease[], owner: string): Promise<void> {
    if (leases.length === 0) return;
    const release = (l: LeaseRelease) => this.releaseStatement(l.id, owner, l.nextAttemptAt, l.stepErrors);
    if (leases.length === 1) return void (await this.writes.writeOne(release(leases[0]!)));
    await this.writes.atomically(function* (): Steps<void> {
      for (const l of leases) yield release(l);
    });
  }

  releaseLease(id: string, owner: string, nextAttemptAt: string): Promise<void> {
    return this.releaseLeases([{ id, nextAttemptAt }], owner);
  }

  private releaseStatement(id: string, owner: string, nextAttemptAt: string, stepErrors?: number) {
    return this.db
      .updateTable("payments")
      .set({ lease_owner: null, lease_until: null, next_attempt_at: nextAttemptAt, ...(stepErrors === undefined ? {} : { step_errors: stepErrors }) })
      .where("id", "=", id)
      .where("lease_owner", "=", owner)
      .compile();
  }
}

/**
 * What admitted a payment, kept with it for its evidence (evidence.ts): the token's and the project's
 * spending controls as the hold judged them, the limited windows it had to fit, and whether it must wait
 * for a person. Null: no controls applied (the balance alone bounded it).
 */
function admittedJson(input: NewPayment, windows: SpendWindow[], approval: boolean): string | null {
  const c = input.controls;
  if (!c) return null;
  return JSON.stringify({
    token_id: c.tokenId,
    token_controls: c.token,
    project_controls: c.project,
    windows: windows.map((w) => ({ scope: w.scope, scope_id: w.scopeId, kind: w.kind, start: w.start, limit_micros: w.limitMicros })),
    approval_required: approval,
  });
}

/**
 * The columns a new payment's row sets: those left null are not named and keep the column's default (null), so
 * the insert names no column a later migration added unless it has something to say (a database being
 * migrated step by step, as the masking migration's test writes one, takes rows of this code too).
 */
function namedColumns(row: PaymentRow): Partial<PaymentRow> {
  return Object.fromEntries(Object.entries(row).filter(([, v]) => v !== null)) as Partial<PaymentRow>;
}

/** The row, if any, as a `Payment`. */
function maybe(row: PaymentRow | undefined): Payment | undefined {
  return row && toPayment(row);
}

/**
 * SQLite: writes a window's counter that has no row yet as what the window's day counters hold (`spend_days`, kept
 * by triggers in the same transaction: the amounts of the payments neither failed nor reversed, of the token and
 * its descendants, or of the whole project, per UTC day; every window starts and ends at a UTC midnight); an
 * existing row is left as it is. The day counters are read, not the payments: their sum would grow with them.
 */
function windowSeed(w: SpendWindow, projectId: string): CompiledQuery {
  const { from, to } = windowBounds(w.kind, w.start);
  const token = w.scope === "token";
  return CompiledQuery.raw(
    // The day counters are read only when the counter has no row yet: once it has one, this selects nothing.
    `insert into "spend_windows" ("scope_id", "kind", "window_start", "spent_micros") select ?, ?, ?, (select coalesce(sum("amount_micros"), 0) from "spend_days" where "project_id" = ?${token ? ` and ("token_id" = ? or "token_id" in (select "descendant_id" from "token_lineage" where "ancestor_id" = ?))` : ""} and "day" >= ? and "day" < ?) where not exists (select 1 from "spend_windows" where "scope_id" = ? and "kind" = ? and "window_start" = ?) on conflict ("scope_id", "kind", "window_start") do nothing`,
    [w.scopeId, w.kind, w.start, projectId, ...(token ? [w.scopeId, w.scopeId] : []), from.slice(0, 10), to.slice(0, 10), w.scopeId, w.kind, w.start],
  );
}

/**
 * SQLite: adds `amount` to each of these counters that exists (a window without a row is summed when first judged);
 * with `returning`, answers each moved counter's key and its new value. The keys are every kind of each scope at
 * the same starts (`countedWindows`), so the statement names the scopes and the starts: SQLite then finds the rows by
 * the counters' key, in a third of the time it took to read the same keys as a JSON list.
 */
function countInWindows(keys: WindowKey[], amount: number, returning = false): CompiledQuery {
  const scopeIds = keys.filter(([, kind]) => kind === WINDOW_KINDS[0]).map(([id]) => id);
  const starts = WINDOW_KINDS.map((kind) => keys.find(([, k]) => k === kind)?.[2]);
  // Invariant: what countedWindows builds, every kind of every scope at one start per kind.
  const scopes = new Set(scopeIds);
  if (keys.length !== scopeIds.length * WINDOW_KINDS.length || !keys.every(([id, kind, start]) => scopes.has(id) && starts[WINDOW_KINDS.indexOf(kind)] === start)) {
    throw new Error(`a payment's windows are not every kind of its scopes at one start each: ${JSON.stringify(keys)}`);
  }
  const shape = `${scopeIds.length}|${returning}`;
  let text = countTexts.get(shape);
  if (!text) {
    const kinds = WINDOW_KINDS.map((kind) => `("kind" = '${kind}' and "window_start" = ?)`).join(" or ");
    text = `update "spend_windows" set "spent_micros" = "spent_micros" + ? where "scope_id" in (${scopeIds.map(() => "?").join(", ")}) and (${kinds})${returning ? ` returning "scope_id", "kind", "window_start", "spent_micros"` : ""}`;
    countTexts.set(shape, text);
  }
  return CompiledQuery.raw(text, [amount, ...scopeIds, ...starts]);
}
/** countInWindows' statements by number of scopes and whether they answer the counters. */
const countTexts = new Map<string, string>();

type CounterRow = { scope_id: string; kind: string; window_start: string; spent_micros: number };

/**
 * SQLite: a limited window whose counter the hold's count found no row for (its first hold this window): writes it
 * from the ledger's sum, which does not hold this payment yet, then adds the amount as the count did to the others.
 * Answers the counter's new value.
 */
function* seedAndCount(w: SpendWindow, counted: WindowKey[], projectId: string, amount: number): Steps<number> {
  // Invariant: a limited window is one of the payment's windows, so the count would have moved an existing row.
  if (!counted.some(([id, kind, start]) => id === w.scopeId && kind === w.kind && start === w.start)) throw new Error(`limited window ${w.scopeId} ${w.kind} ${w.start} is not among the payment's windows`);
  yield windowSeed(w, projectId);
  const [row] = (yield CompiledQuery.raw(`update "spend_windows" set "spent_micros" = "spent_micros" + ? where "scope_id" = ? and "kind" = ? and "window_start" = ? returning "spent_micros"`, [amount, w.scopeId, w.kind, w.start])) as { spent_micros: number }[];
  if (!row) throw new Error(`spending window ${w.scopeId} ${w.kind} ${w.start} has no row after its seed`);
  return Number(row.spent_micros);
}