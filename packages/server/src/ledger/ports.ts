/**
 * The ledger's ports, one per concern: each is the type of one store, a member of the `Ledger` in a module
 * of its own (store.ts composes them). A consumer names the ports it uses, as members of the ledger it is
 * given (`{ payments: PaymentStore; kv: KvStore }`), so what a module may do to the ledger shows in its
 * signature, and a test double need only give that much.
 */
import type { Ledger } from "./store.ts";

/** Payments: the hold, its resolution or reversal, progress, leases, approvals and refusals (payments.ts). */
export type PaymentStore = Ledger["payments"];

/** Idempotency keys claimed before a payment row owns them, and the replies kept for them (idempotencyKeys.ts). */
export type IdempotencyKeyStore = Ledger["idempotencyKeys"];

/** The relayer's nonce counter and the transactions it signed with each nonce (relayerNonces.ts). */
export type NonceStore = Ledger["relayerNonces"];

/** Deposits seen on-chain, credited or dropped (deposits.ts). */
export type DepositStore = Ledger["deposits"];

/** Completed bank payments watched for returns; off-ramp refunds seen on-chain (returnWatch.ts). */
export type ReturnWatchStore = Ledger["returnWatch"];

/** Projects: created, paused, given their wallet (projects.ts). */
export type ProjectStore = Ledger["projects"];

/** API tokens, looked up by hash, and the spending controls set on a token or its project (tokens.ts). */
export type TokenStore = Ledger["tokens"];

/** Balances, the plain page and count of a project's transactions, spend per day, reconciliation (balances.ts). */
export type BalanceStore = Ledger["balances"];

/** A project's transactions filtered or after a cursor (transactionReads.ts). */
export type TransactionReadStore = Ledger["transactions"];

/** The console's list of a project's transactions, its fees folded in (consoleTransactions.ts). */
export type ConsoleTransactionStore = Ledger["consoleTransactions"];

/** Webhooks to clients: endpoints, the outbox and its deliveries (webhookOutbox.ts). */
export type WebhookStore = Ledger["webhooks"];

/** Operators' admin credentials (adminCredentials.ts). */
export type AdminCredentialStore = Ledger["adminCredentials"];
export type AuditStore = Ledger["audit"];

/** The deployment's mode and chain (deployment.ts). */
export type DeploymentStore = Ledger["deployment"];

/** Small persistent state: the `kv` rows (kvRows.ts). */
export type KvStore = Ledger["kv"];
/** Prices quoted by POST /v1/quote (quotes.ts). */
export type QuoteStore = Ledger["quotes"];

/** Reads an operator alerts on (health.ts). */
export type HealthStore = Ledger["health"];

/** Payments' evidence records, hash-chained per project (evidence.ts). */
export type EvidenceReadStore = Ledger["evidence"];
