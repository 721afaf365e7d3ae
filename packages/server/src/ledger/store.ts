/**
 * The `Ledger`: the composition of the ledger's stores, one per concern, each a member in a module of its
 * own (ports.ts names them): payments, projects, tokens, balances, deposits, relayerNonces, kv, webhooks, …
 * Besides them it answers only the operations on the database as a whole (ping, checkpoint, verify, overload).
 */
import { sql } from "kysely";
import { type Db, type Dialect, pgDirectOf, sqliteDirectOf } from "./db.ts";
import { ReturnWatch } from "./returnWatch.ts";
import { ConsoleSessions } from "./consoleSessions.ts";
import { ConsoleTransactions } from "./consoleTransactions.ts";
import { WebhookOutbox } from "./webhookOutbox.ts";
import { AdminCredentials } from "./adminCredentials.ts";
import { AuditLog } from "./auditLog.ts";
import { IdempotencyKeys } from "./idempotencyKeys.ts";
import { AtomicWrites } from "./atomicWrites.ts";
import { RelayerNonces } from "./relayerNonces.ts";
import { KvRows } from "./kvRows.ts";
import { Quotes } from "./quotes.ts";
import { Deployment } from "./deployment.ts";
import { Deposits } from "./deposits.ts";
import { Projects } from "./projects.ts";
import { Tokens } from "./tokens.ts";
import { Balances } from "./balances.ts";
import { ReceivedWebhooks } from "./receivedWebhooks.ts";
import { Payments } from "./payments.ts";
import { attachDb } from "./connection.ts";
import { type LedgerProblem, verifyLedger } from "./verify.ts";
import { TransactionReads } from "./transactionReads.ts";
import { HealthReads } from "./health.ts";
import { EvidenceStore } from "./evidence.ts";
import { SpendDays } from "./spendDays.ts";
import { type StoreOverload, storeOverloadOf } from "./overload.ts";
import type { Clock, IdGenerator } from "../ids.ts";

export class Ledger {
  /** Payments: the hold, its resolution or reversal, leases, approvals and refusals (payments.ts). */
  readonly payments: Payments;
  /** The web console's sessions and sign-in codes (consoleSessions.ts). */
  readonly consoleSessions: ConsoleSessions;
  /** Webhooks to clients: endpoints, outbox, deliveries (webhookOutbox.ts). */
  readonly webhooks: WebhookOutbox;
  /** Operators' admin credentials (adminCredentials.ts). */
  readonly adminCredentials: AdminCredentials;
  /** The audit log of operator and token-management changes: read and pruned here, written by the stores that change (auditLog.ts). */
  readonly audit: AuditLog;
  /** Idempotency keys claimed before a payment row owns them (idempotencyKeys.ts). */
  readonly idempotencyKeys: IdempotencyKeys;
  /** The relayer's nonce counter and the transactions it signed (relayerNonces.ts). */
  readonly relayerNonces: RelayerNonces;
  /** Small persistent state: the `kv` rows (kvRows.ts). */
  readonly kv: KvRows;
  /** Prices quoted by POST /v1/quote, until they expire (quotes.ts). */
  readonly quotes: Quotes;
  /** The deployment's mode and chain (deployment.ts). */
  readonly deployment: Deployment;
  /** Deposits seen, credited or dropped (deposits.ts). */
  readonly deposits: Deposits;
  /** Completed bank payments watched for returns, and off-ramp refunds seen on-chain (returnWatch.ts). */
  readonly returnWatch: ReturnWatch;

  /** Projects: created, paused, given their wallet address (projects.ts). */
  readonly projects: Projects;
  /** API tokens, their batched lookup by hash, and spending controls (tokens.ts). */
  readonly tokens: Tokens;

  /** Balances, the plain page of transactions, spend per day (balances.ts). */
  readonly balances: Balances;
  /** The ids of webhooks received, against replays (receivedWebhooks.ts). */
  readonly receivedWebhooks: ReceivedWebhooks;
  /** Reads of one project's transactions beyond the plain page (transactionReads.ts). */
  readonly transactions: TransactionReads;
  /** The console's list: a payment's row with its fee, agent and counterparty, and its filters (consoleTransactions.ts). */
  readonly consoleTransactions: ConsoleTransactions;
  /** Reads an operator alerts on: the oldest open payment per rail, the webhook backlog (health.ts). */
  readonly health: HealthReads;
  /** Payments' evidence records, hash-chained per project, written by triggers (evidence.ts). */
  readonly evidence: EvidenceStore;
  /** Spend per day, token, rail and counterparty, kept by triggers (spendDays.ts). */
  readonly spendDays: SpendDays;

  constructor(
    private readonly db: Db,
    readonly dialect: Dialect,
    clock: Clock,
    newId: IdGenerator,
  ) {
    attachDb(this, db);
    const direct = sqliteDirectOf(db);
    // SQLite: the hot writes share commits (groupCommit.ts); PostgreSQL runs them as transactions.
    const writes = new AtomicWrites(db, direct?.group);
    this.consoleSessions = new ConsoleSessions(db);
    this.webhooks = new WebhookOutbox(db, dialect);
    this.adminCredentials = new AdminCredentials(db);
    this.audit = new AuditLog(db);
    this.idempotencyKeys = new IdempotencyKeys(db, writes);
    this.transactions = new TransactionReads(db, dialect, pgDirectOf(db));
    this.consoleTransactions = new ConsoleTransactions(db, this.transactions);
    this.relayerNonces = new RelayerNonces(db, writes);
    this.kv = new KvRows(db, writes);
    this.quotes = new Quotes(db, writes);
    this.deployment = new Deployment(db);
    this.health = new HealthReads(db);
    this.evidence = new EvidenceStore(db);
    this.deposits = new Deposits(db, clock, newId);
    this.returnWatch = new ReturnWatch(db, clock);
    this.projects = new Projects(db, clock, newId);
    this.tokens = new Tokens(db, dialect, clock, writes, direct?.read, pgDirectOf(db));
    this.balances = new Balances(db, dialect, pgDirectOf(db));
    this.spendDays = new SpendDays(db);
    this.receivedWebhooks = new ReceivedWebhooks(db, clock);
    this.payments = new Payments(db, dialect, clock, newId, writes, this.balances);
  }

  // ---------------------------------------------------------------------------------------------
  // Operations

  /** Whether `err` is this database at capacity (overload.ts): the request that met it did nothing there, and may be sent again. */
  overloadOf(err: unknown): StoreOverload | undefined {
    return storeOverloadOf(err);
  }

  /** One round trip to the database: the readiness probe. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.db);
  }

  /**
   * SQLite: copies what it can of the WAL into the database file without taking the write lock
   * (PASSIVE), so writers never wait for it.
   */
  async checkpointWal(): Promise<void> {
    await sql`pragma wal_checkpoint(PASSIVE)`.execute(this.db);
  }

  /** Recomputes every balance from the journal and checks the ledger's invariants (verify.ts). */
  verify(): Promise<{ ok: boolean; problems: LedgerProblem[]; projects: number; entries: number }> {
    return verifyLedger(this.db);
  }
}
