/**
 * The ledger's inspection port for tests: the reads a test checks stored state with, and the writes it sets up
 * or breaks state with, each under a name that says what it does. Tests reach the database only through this
 * module, so a change of the schema is answered here once and not in every test that looks at a row. Every
 * function runs on SQLite and PostgreSQL alike. Nothing in the server imports it (.dependency-cruiser.cjs,
 * "ledger-testing-is-for-tests").
 */
import { type CompiledQuery, type QueryResult, type Selectable, type Updateable, sql } from "kysely";
import { dbOf } from "./connection.ts";
import { pgDirectOf } from "./db.ts";
import { migrateToLatest } from "./migrations.ts";
import type { Database } from "./schema.ts";
import type { Ledger } from "./store.ts";

/** A row of `table` as the database gives it back. */
export type Row<T extends keyof Database> = Selectable<Database[T]>;
export type PaymentStatus = Row<"payments">["status"];

// ---------------------------------------------------------------------------------------------------------
// The database as a whole

/** Every row of `table`, as stored (for tests that look for what must never be kept). */
export function tableRows<T extends keyof Database>(ledger: Ledger, table: T): Promise<Row<T>[]> {
  return dbOf(ledger).selectFrom(table).selectAll().execute() as Promise<Row<T>[]>;
}

/** How many rows `table` holds. */
export async function countRows(ledger: Ledger, table: keyof Database): Promise<number> {
  const row = await dbOf(ledger)
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Sends a compiled statement to the database as the ledger would. */
export type QuerySender = (query: CompiledQuery) => Promise<QueryResult<unknown>>;

/**
 * Routes every statement the ledger sends through `intercept` (which may pass it on with `send`, or fail it)
 * until the returned function restores the direct path.
 */
export function interceptQueries(ledger: Ledger, intercept: (query: CompiledQuery, send: QuerySender) => Promise<QueryResult<unknown>>): () => void {
  const db = dbOf(ledger);
  const send = db.executeQuery.bind(db) as QuerySender;
  db.executeQuery = ((query: CompiledQuery) => intercept(query, send)) as typeof db.executeQuery;
  // PostgreSQL's prepared statements (the token lookup, the balance, the plain page) go by the same way.
  const pg = pgDirectOf(db);
  const prepared = pg?.prepared;
  if (pg && prepared) pg.prepared = async (name, query) => (await intercept(query, async (q) => ({ rows: await prepared(name, q) }))).rows as never;
  return () => {
    db.executeQuery = send as typeof db.executeQuery;
    if (pg && prepared) pg.prepared = prepared;
  };
}

/**
 * Takes `n` connections of the ledger's pool (PostgreSQL) and keeps them, idle, until the returned function gives
 * them back: a pool with none free, as under a burst of requests.
 */
export async function holdConnections(ledger: Ledger, n: number): Promise<() => Promise<void>> {
  const db = dbOf(ledger);
  let giveBack!: () => void;
  const givenBack = new Promise<void>((r) => (giveBack = r));
  const taken = Array.from({ length: n }, () => {
    let tookIt!: () => void;
    const took = new Promise<void>((r) => (tookIt = r));
    const done = db.connection().execute(async () => {
      tookIt();
      await givenBack;
    });
    return { took, done };
  });
  await Promise.all(taken.map((t) => t.took));
  return async () => {
    giveBack();
    await Promise.all(taken.map((t) => t.done));
  };
}

/** Forgets that migration `name` ran and drops `tables`, then migrates to the latest: an upgrade replayed. Answers the migrations run. */
export async function rerunMigration(ledger: Ledger, name: string, tables: (keyof Database)[]): Promise<string[]> {
  const db = dbOf(ledger);
  await db.deleteFrom("kysely_migration" as never).where("name" as never, "=", name as never).execute();
  for (const table of tables) await db.schema.dropTable(table).execute();
  return migrateToLatest(db, ledger.dialect);
}

// ---------------------------------------------------------------------------------------------------------
// Payments and transactions

/** Which payments `paymentRows` gives: every condition given must hold. */
export type PaymentFilter = {
  ids?: string[];
  projectId?: string | string[];
  status?: PaymentStatus | PaymentStatus[];
  recipient?: string;
  idempotencyKey?: string;
  providerRef?: string;
};

/** Payment rows as stored, oldest first. */
export function paymentRows(ledger: Ledger, filter: PaymentFilter = {}): Promise<Row<"payments">[]> {
  const { ids, projectId, status, recipient, idempotencyKey, providerRef } = filter;
  return dbOf(ledger)
    .selectFrom("payments")
    .selectAll()
    .$if(ids !== undefined, (q) => q.where("id", "in", ids!))
    .$if(projectId !== undefined, (q) => q.where("project_id", "in", ([] as string[]).concat(projectId!)))
    .$if(status !== undefined, (q) => q.where("status", "in", ([] as PaymentStatus[]).concat(status!)))
    .$if(recipient !== undefined, (q) => q.where("recipient", "=", recipient!))
    .$if(idempotencyKey !== undefined, (q) => q.where("idempotency_key", "=", idempotencyKey!))
    .$if(providerRef !== undefined, (q) => q.where("provider_ref", "=", providerRef!))
    .orderBy("created_at")
    .orderBy("id")
    .execute();
}

/** The payments not final yet (pending or processing), oldest first. */
export function openPayments(ledger: Ledger): Promise<Row<"payments">[]> {
  return paymentRows(ledger, { status: ["pending", "processing"] });
}

/** Transaction rows as stored, in the order they were written; of one project, or of one payment. */
export function transactionRows(ledger: Ledger, filter: { projectId?: string | string[]; paymentId?: string } = {}): Promise<Row<"transactions">[]> {
  const { projectId, paymentId } = filter;
  return dbOf(ledger)
    .selectFrom("transactions")
    .selectAll()
    .$if(projectId !== undefined, (q) => q.where("project_id", "in", ([] as string[]).concat(projectId!)))
    .$if(paymentId !== undefined, (q) => q.where("payment_id", "=", paymentId!))
    .orderBy("seq")
    .execute();
}

/** One transaction's row (the wire id), or undefined. */
export function transactionRow(ledger: Ledger, id: string): Promise<Row<"transactions"> | undefined> {
  return dbOf(ledger).selectFrom("transactions").selectAll().where("id", "=", id).executeTakeFirst();
}

/** Writes transaction rows directly, as a history the payments did not make (its balance's count is not moved). */
export async function insertTransactions(ledger: Ledger, rows: Omit<Row<"transactions">, "seq">[]): Promise<void> {
  if (rows.length) await dbOf(ledger).insertInto("transactions").values(rows).execute();
}

/** Sets a transaction's status in place, as a payment moving on would. */
export async function setTransactionStatus(ledger: Ledger, id: string, status: string): Promise<void> {
  await dbOf(ledger).updateTable("transactions").set({ status }).where("id", "=", id).execute();
}

/** Sets the number of transactions a project's balance row counts (`total_count` of its list). */
export async function setTransactionCount(ledger: Ledger, projectId: string, n: number): Promise<void> {
  await dbOf(ledger).updateTable("balances").set({ tx_count: n }).where("project_id", "=", projectId).execute();
}

/** Moves a kept count of transactions (SQLite's `transaction_counts`, migration 0008) by `delta`, out of step with the rows. */
export async function shiftTransactionCount(ledger: Ledger, key: { projectId: string; day: string; type: string; status: string }, delta: number): Promise<void> {
  await dbOf(ledger)
    .updateTable("transaction_counts")
    .set({ n: sql<number>`n + ${delta}` })
    .where("project_id", "=", key.projectId)
    .where("day", "=", key.day)
    .where("type", "=", key.type)
    .where("status", "=", key.status)
    .execute();
}

// ---------------------------------------------------------------------------------------------------------
// Balances, the journal, spending

/** Balance rows, of the projects given or of all. */
export function balanceRows(ledger: Ledger, projectIds?: string[]): Promise<Row<"balances">[]> {
  return dbOf(ledger)
    .selectFrom("balances")
    .selectAll()
    .$if(projectIds !== undefined, (q) => q.where("project_id", "in", projectIds!))
    .orderBy("project_id")
    .execute();
}

/** Sets a project's available balance in place, with no deposit behind it (the journal no longer verifies). */
export async function setAvailable(ledger: Ledger, projectId: string, micros: number): Promise<void> {
  await dbOf(ledger).updateTable("balances").set({ available_micros: micros }).where("project_id", "=", projectId).execute();
}

/** Moves a project's available balance by `deltaMicros` in place, behind the journal's back. */
export async function shiftAvailable(ledger: Ledger, projectId: string, deltaMicros: number): Promise<void> {
  await dbOf(ledger)
    .updateTable("balances")
    .set((eb) => ({ available_micros: eb("available_micros", "+", deltaMicros) }))
    .where("project_id", "=", projectId)
    .execute();
}

/** Journal entries, in the order written; of one project, of one kind. */
export function journalEntries(ledger: Ledger, filter: { projectId?: string; kind?: string } = {}): Promise<Row<"journal_entries">[]> {
  const { projectId, kind } = filter;
  return dbOf(ledger)
    .selectFrom("journal_entries")
    .selectAll()
    .$if(projectId !== undefined, (q) => q.where("project_id", "=", projectId!))
    .$if(kind !== undefined, (q) => q.where("kind", "=", kind!))
    .orderBy("seq")
    .execute();
}

/** Per journal account whose name contains one of `parts`: the sum of its entries and their number, by account. */
export async function journalTotals(ledger: Ledger, parts: string[]): Promise<{ account: string; sum: number; n: number }[]> {
  if (!parts.length) return [];
  const rows = await dbOf(ledger)
    .selectFrom("journal_entries")
    .select(["account", (eb) => eb.fn.sum<number | string>("amount_micros").as("sum"), (eb) => eb.fn.countAll<number | string>().as("n")])
    .where((eb) => eb.or(parts.map((p) => eb("account", "like", `%${p}%`))))
    .groupBy("account")
    .orderBy("account")
    .execute();
  return rows.map((r) => ({ account: r.account, sum: Number(r.sum), n: Number(r.n) }));
}

/** The spending counted per window of the tokens and projects given. */
export function spendWindows(ledger: Ledger, scopeIds: string[]): Promise<Row<"spend_windows">[]> {
  return dbOf(ledger).selectFrom("spend_windows").selectAll().where("scope_id", "in", scopeIds).orderBy("scope_id").orderBy("kind").orderBy("window_start").execute();
}

/** Sets a token's revocation or expiry in place, leaving its descendants as they are, as no interface can. */
export async function setTokenEnd(ledger: Ledger, tokenId: string, end: { revoked_at?: string | null; expires_at?: string | null }): Promise<void> {
  await dbOf(ledger).updateTable("api_tokens").set(end).where("id", "=", tokenId).execute();
}

/** Gives a token to another project in place, as no interface can. */
export async function moveToken(ledger: Ledger, tokenId: string, projectId: string): Promise<void> {
  await dbOf(ledger).updateTable("api_tokens").set({ project_id: projectId }).where("id", "=", tokenId).execute();
}

// ---------------------------------------------------------------------------------------------------------
// The chain's side: relayer transactions, deposits, small state

/** The relayer's stored transactions, by nonce; of one payment, one hash, or the relayer addresses given. */
export function relayerTxs(ledger: Ledger, filter: { paymentId?: string; txHash?: string; relayers?: string[] } = {}): Promise<Row<"relayer_txs">[]> {
  const { paymentId, txHash, relayers } = filter;
  return dbOf(ledger)
    .selectFrom("relayer_txs")
    .selectAll()
    .$if(paymentId !== undefined, (q) => q.where("payment_id", "=", paymentId!))
    .$if(txHash !== undefined, (q) => q.where("tx_hash", "=", txHash!))
    .$if(relayers !== undefined, (q) => q.where("relayer", "in", relayers!))
    .orderBy("nonce")
    .execute();
}

/** Stores relayer transaction rows as they would be, without a relayer or a chain. */
export async function insertRelayerTxs(ledger: Ledger, rows: Row<"relayer_txs">[]): Promise<void> {
  await dbOf(ledger).insertInto("relayer_txs").values(rows).execute();
}

/** Deposit rows, in the order seen; of one transaction hash, of projects, in one status. */
export function depositRows(ledger: Ledger, filter: { txHash?: string; projectId?: string | string[]; status?: Row<"deposits">["status"] } = {}): Promise<Row<"deposits">[]> {
  const { txHash, projectId, status } = filter;
  return dbOf(ledger)
    .selectFrom("deposits")
    .selectAll()
    .$if(txHash !== undefined, (q) => q.where("tx_hash", "=", txHash!))
    .$if(projectId !== undefined, (q) => q.where("project_id", "in", ([] as string[]).concat(projectId!)))
    .$if(status !== undefined, (q) => q.where("status", "=", status!))
    .orderBy("seen_at")
    .orderBy("tx_hash")
    .orderBy("log_index")
    .execute();
}

/** The `kv` rows, by key; only those whose key starts with `prefix` when given. */
export function kvRows(ledger: Ledger, prefix?: string): Promise<Row<"kv">[]> {
  return dbOf(ledger)
    .selectFrom("kv")
    .selectAll()
    .$if(prefix !== undefined, (q) => q.where("key", "like", `${prefix}%`))
    .orderBy("key")
    .execute();
}

/** Writes `kv` rows directly (a row of the key is replaced), as an earlier release or another process would. */
export async function putKv(ledger: Ledger, rows: Row<"kv">[]): Promise<void> {
  if (!rows.length) return;
  await dbOf(ledger)
    .insertInto("kv")
    .values(rows)
    .onConflict((oc) => oc.column("key").doUpdateSet((eb) => ({ value: eb.ref("excluded.value") })))
    .execute();
}

/** Writes ids of received webhooks directly, with the time each was received (its replay guard). */
export async function insertReceivedWebhooks(ledger: Ledger, rows: Row<"webhook_events">[]): Promise<void> {
  if (rows.length) await dbOf(ledger).insertInto("webhook_events").values(rows).execute();
}

/** An off-ramp's return-watch row (cursor and lease), or undefined. */
export function returnWatchRow(ledger: Ledger, provider: string): Promise<Row<"return_watch"> | undefined> {
  return dbOf(ledger).selectFrom("return_watch").selectAll().where("provider", "=", provider).executeTakeFirst();
}

/** Moves a quote's expiry in place. */
export async function setQuoteExpiry(ledger: Ledger, quoteId: string, expiresAt: string): Promise<void> {
  await dbOf(ledger).updateTable("quotes").set({ expires_at: expiresAt }).where("id", "=", quoteId).execute();
}

/** Tries to rewrite an audit entry's actor in place (the database refuses: entries are never changed). */
export async function rewriteAuditActor(ledger: Ledger, seq: number, actorName: string): Promise<void> {
  await dbOf(ledger).updateTable("audit_log").set({ actor_name: actorName }).where("seq", "=", seq).execute();
}

// ---------------------------------------------------------------------------------------------------------
// Webhooks to clients

/** Outbox events in the order written; of one project, about one object. */
export function webhookEvents(ledger: Ledger, filter: { projectId?: string; objectId?: string } = {}): Promise<Row<"webhook_outbox">[]> {
  const { projectId, objectId } = filter;
  return dbOf(ledger)
    .selectFrom("webhook_outbox")
    .selectAll()
    .$if(projectId !== undefined, (q) => q.where("project_id", "=", projectId!))
    .$if(objectId !== undefined, (q) => q.where("object_id", "=", objectId!))
    .orderBy("seq")
    .execute();
}

/** Delivery rows (one per event and endpoint); of one endpoint, of one project's events. */
export function webhookDeliveries(ledger: Ledger, filter: { endpointId?: string; projectId?: string } = {}): Promise<Row<"webhook_deliveries">[]> {
  const { endpointId, projectId } = filter;
  const db = dbOf(ledger);
  return db
    .selectFrom("webhook_deliveries")
    .selectAll()
    .$if(endpointId !== undefined, (q) => q.where("endpoint_id", "=", endpointId!))
    .$if(projectId !== undefined, (q) => q.where("event_id", "in", db.selectFrom("webhook_outbox").select("id").where("project_id", "=", projectId!)))
    .orderBy("event_id")
    .orderBy("endpoint_id")
    .execute();
}

/** Deletes every delivery row, so the next events start from none. */
export async function clearWebhookDeliveries(ledger: Ledger): Promise<void> {
  await dbOf(ledger).deleteFrom("webhook_deliveries").execute();
}

/** Marks an endpoint disabled in place, as the deliverer does after days of failures. */
export async function disableWebhookEndpoint(ledger: Ledger, id: string, at: string, reason: string): Promise<void> {
  await dbOf(ledger).updateTable("webhook_endpoints").set({ disabled_at: at, disabled_reason: reason }).where("id", "=", id).execute();
}

// ---------------------------------------------------------------------------------------------------------
// Evidence

/** A project's evidence records by number; only one payment's, or only the numbers given. */
export function evidenceRows(ledger: Ledger, projectId: string, filter: { paymentId?: string; seqs?: number[] } = {}): Promise<Row<"evidence">[]> {
  const { paymentId, seqs } = filter;
  return dbOf(ledger)
    .selectFrom("evidence")
    .selectAll()
    .where("project_id", "=", projectId)
    .$if(paymentId !== undefined, (q) => q.where("payment_id", "=", paymentId!))
    .$if(seqs !== undefined, (q) => q.where("seq", "in", seqs!))
    .orderBy("seq")
    .execute();
}

/** Edits a stored evidence record in place (its hash is not recomputed unless given). */
export async function setEvidence(ledger: Ledger, projectId: string, seq: number, values: Updateable<Database["evidence"]>): Promise<void> {
  await dbOf(ledger).updateTable("evidence").set(values).where("project_id", "=", projectId).where("seq", "=", seq).execute();
}

/** Deletes a stored evidence record. */
export async function deleteEvidence(ledger: Ledger, projectId: string, seq: number): Promise<void> {
  await dbOf(ledger).deleteFrom("evidence").where("project_id", "=", projectId).where("seq", "=", seq).execute();
}

/** Writes an evidence record back as it was read. */
export async function insertEvidence(ledger: Ledger, row: Row<"evidence">): Promise<void> {
  await dbOf(ledger).insertInto("evidence").values(row).execute();
}
