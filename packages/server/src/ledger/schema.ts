/**
 * Table types for Kysely. Money columns are integers in the smallest unit named by the column
 * (`_micros` = micro-USDC, `amount` of a wire transaction = its currency's unit). Timestamps are
 * ISO 8601 text in UTC on both dialects, so ordering and comparisons are one code path.
 */
import type { Generated } from "kysely";

import type { Plan } from "../domain/project.ts";

export type { Plan };

export interface ProjectsTable {
  id: string;
  name: string;
  plan: Plan;
  paused: number; // 0 | 1 (SQLite has no boolean)
  wallet_index: number;
  wallet_address: string | null;
  created_at: string;
  spending_controls: string | null; // JSON SpendingControls (spending.ts): every token of the project obeys them too
  wallet_frozen_at: string | null; // since when USDC's blacklister has frozen the wallet; null while it can move money
}

export interface ApiTokensTable {
  id: string;
  project_id: string;
  token_hash: string; // sha256 hex of the whole token; the token itself is never stored
  display_prefix: string; // e.g. "aw_test_AbCd" — enough to recognise, useless to authenticate
  permissions: string; // comma separated: read,pay,x402
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  spending_controls: string | null; // JSON SpendingControls (spending.ts), or none
  name: string | null; // for people: which agent holds it
  parent_id: string | null; // the token that created it (POST /v1/tokens); null for an operator's
  depth: number; // 0 for an operator's token, parent's + 1 for a child
  allowance_micros: number | null; // the most it (with its descendants) may ever spend
}

/** Every (ancestor, descendant) pair of child tokens (migration 0027); `depth` 1 is the parent. */
export interface TokenLineageTable {
  ancestor_id: string;
  descendant_id: string;
  depth: number;
}

export interface BalancesTable {
  project_id: string;
  available_micros: number;
  held_micros: number; // amount + fee of payments on hold (pending/processing)
  pending_micros: number; // deposits seen on-chain, not yet confirmed
  total_funded_micros: number;
  total_spent_micros: number;
  tx_count: number; // wire transactions of the project, so total_count never needs count(*)
}

export interface TransactionsTable {
  seq: Generated<number>;
  id: string;
  project_id: string;
  payment_id: string | null;
  type: string;
  status: string;
  amount: number;
  currency: "usd" | "usdc";
  description: string | null;
  merchant_name: string | null;
  created_at: string;
  completed_at: string | null;
  /** 1..N per project in recording order (see migration 0002); N = balances.tx_count. */
  pos: number | null;
}

export interface JournalEntriesTable {
  seq: Generated<number>;
  movement_id: string;
  kind: string; // deposit | hold | post | void | reverse | fund
  account: string; // project:<id>:available, project:<id>:held, world:chain, world:payouts, revenue:fees
  project_id: string | null;
  amount_micros: number; // signed; every movement's entries sum to zero
  created_at: string;
}

export interface PaymentsTable {
  id: string; // = the id of the rail transaction
  project_id: string;
  rail: "x402" | "usdc_transfer" | "fiat";
  status: "pending" | "processing" | "completed" | "failed" | "reversed";
  amount_units: number; // rail-native: micro-USDC, or cents for fiat
  fee_units: number;
  amount_micros: number;
  fee_micros: number;
  currency: "usd" | "usdc";
  recipient: string; // URL, address, or bank recipient name
  recipient_json: string | null; // bank details for fiat
  description: string | null;
  idempotency_key: string | null;
  fee_txn_id: string;
  tx_hash: string | null;
  provider_ref: string | null;
  estimated_arrival: string | null;
  response_json: string | null; // x402: the target's reply
  rail_state: string | null; // JSON: authorizations, nonces, signed relayer tx, deadlines
  failure_reason: string | null; // failed/reversed: the human message (the revert, the ACH return code, the merchant's answer)
  failure_code: string | null; // failed/reversed: a FailureCode (failureCodes.ts), stable for programs
  step_errors: number; // steps of this payment that failed (a retry's backoff and bound, settlement/settlementRetry.ts)
  in_flight_until: string | null; // the creating request is still running until then (409 for repeats)
  lease_owner: string | null;
  lease_until: string | null;
  next_attempt_at: string;
  attempts: number;
  created_at: string;
  updated_at: string;
  completed_at: string | null;
  /** JSON object of the caller's string tags (migration 0008), or null. */
  metadata: string | null;
  /** The token that made the payment (migration 0007); null before spending controls existed. */
  token_id: string | null;
  /** JSON [[scope id, window kind, window start], …]: the window counters this payment's amount was added to. */
  spend_windows: string | null;
  /** null, or awaiting | approved | denied | expired: a payment above a token's approval threshold. */
  approval: string | null;
  /** Until when an awaiting payment may be approved; afterwards it fails and is credited back. */
  approval_until: string | null;
  /** Who approved or denied it (migration 0014): "operator adm_…" (console), the admin credential's id (admin API), "token tok_… (aw_test_abcd…)", "cli:<user>"; null if nobody did. */
  approval_decided_by: string | null;
  approval_decided_at: string | null;
  /** The decider's name as it was when they decided (a credential's name, a token's prefix; migration 0028). */
  approval_decided_by_name: string | null;
  /** The reason the decider gave, if any (migration 0028). */
  approval_reason: string | null;
  /** Fiat, completed: when the return watch last read its payout directly (migration 0019). */
  return_checked_at: string | null;
  /** Fiat: the on-chain transaction by which the provider sent its USDC back, as the provider named it (migration 0019). */
  refund_tx_hash: string | null;
  /** JSON: the spending controls that admitted the payment, as judged by its hold (migration 0030); null: none applied. */
  admitted_json: string | null;
}

export interface DepositsTable {
  chain: string;
  tx_hash: string;
  log_index: number;
  project_id: string;
  to_address: string;
  from_address: string;
  amount_micros: number;
  block_number: number;
  block_hash: string;
  status: "seen" | "credited" | "dropped";
  txn_id: string | null;
  seen_at: string;
  credited_at: string | null;
}

/** The deployment's mode and chain, one row (migration 0020, ledger/deployment.ts). */
export interface DeploymentTable {
  id: number;
  mode: string; // 'live' | 'test'
  chain_id: number;
  created_at: string;
}

export interface KvTable {
  key: string;
  value: string;
}

/** Idempotency keys claimed before a payment row owns them (migration 0018, ledger/idempotencyKeys.ts). */
export interface IdempotencyKeysTable {
  project_id: string;
  key: string;
  state: "running" | "reply";
  /** The claiming request (`running`); null for a kept reply. */
  token: string | null;
  /** `running`: the claim's lease; `reply`: when the kept reply expires. */
  until: string;
  reply_json: string | null;
}

export interface RelayerTxsTable {
  nonce: number;
  relayer: string;
  payment_id: string;
  raw_tx: string;
  tx_hash: string;
  created_at: string;
}

export interface WebhookEventsTable {
  id: string;
  source: string;
  received_at: string;
}

/** SQLite only (migration 0008): transactions per (project, type, status, UTC day), kept by triggers. */
export interface TransactionCountsTable {
  project_id: string;
  type: string;
  status: string;
  day: string; // YYYY-MM-DD of created_at
  n: number;
}

/** Spend per (project, UTC day, token, rail, counterparty) of payments that count against limits (migration 0032, spendDays.ts). */
export interface SpendDaysTable {
  project_id: string;
  day: string; // YYYY-MM-DD of the payment's created_at
  token_id: string; // "" for a payment without a token
  rail: string;
  counterparty: string;
  amount_micros: number;
  fee_micros: number;
  n: number;
}

/** Spending per window (spending.ts): one row per (token or project id, kind, window start). */
export interface SpendWindowsTable {
  scope_id: string;
  kind: string; // daily | weekly | monthly | all_time
  window_start: string; // ISO 8601 UTC, or "all"
  spent_micros: number;
}

/** Payment attempts a spending control refused (kept bounded: the newest REFUSALS_KEPT_MAX). */
export interface SpendingRefusalsTable {
  seq: Generated<number>;
  project_id: string;
  token_id: string | null;
  code: string;
  detail: string;
  rail: string;
  recipient: string;
  amount_micros: number | null;
  created_at: string;
  /**
   * What a limit refusal measured (migration 0033; domain/spending.ts `LimitBreach`): the rule (per_payment,
   * daily, weekly, monthly, all_time, allowance), whose it is (token, ancestor, project) and that token's or
   * project's id, the limit and, for a window read, what it had spent and what remained, in micro-USDC. Null
   * for other codes and on rows written before.
   */
  rule: string | null;
  rule_level: string | null;
  rule_owner_id: string | null;
  limit_micros: number | null;
  spent_micros: number | null;
  remaining_micros: number | null;
}

/** Operators' admin credentials (migration 0013): only the SHA-256 of the credential is stored. */
export interface AdminCredentialsTable {
  id: string;
  name: string;
  credential_hash: string;
  display_prefix: string; // "aw_admin_AbCd"
  created_at: string;
  revoked_at: string | null;
  /** viewer | approver | admin (migration 0028; credentials made before it are admin). */
  role: string;
}

/** The audit log (migration 0028, ledger/auditLog.ts): one row per operator or token-management change, never updated. */
export interface AuditLogTable {
  seq: Generated<number>;
  at: string;
  /** adm_… | tok_… | cli:<user> */
  actor_id: string;
  actor_name: string;
  actor_role: string | null;
  ip: string | null;
  action: string;
  project_id: string | null;
  target_id: string;
  before_json: string | null;
  after_json: string | null;
}

/**
 * A price quoted by `POST /v1/quote` (migration 0029_quotes): the request and the terms a payment with its
 * id must find again. Kept until it expires (quotes.ts prunes them).
 */
export interface QuotesTable {
  id: string;
  project_id: string;
  token_id: string;
  url: string;
  method: string;
  /** SHA-256 hex of the request body ("" hashed when none). */
  body_hash: string;
  protocol: string;
  scheme: string;
  network: string;
  asset: string;
  pay_to: string;
  amount_micros: number;
  /** would_pay | needs_approval | refused, and the refusal's code. */
  verdict: string;
  refusal_code: string | null;
  created_at: string;
  expires_at: string;
}

export interface Database {
  quotes: QuotesTable;
  projects: ProjectsTable;
  api_tokens: ApiTokensTable;
  balances: BalancesTable;
  transactions: TransactionsTable;
  journal_entries: JournalEntriesTable;
  payments: PaymentsTable;
  deposits: DepositsTable;
  kv: KvTable;
  deployment: DeploymentTable;
  idempotency_keys: IdempotencyKeysTable;
  relayer_txs: RelayerTxsTable;
  webhook_events: WebhookEventsTable;
  transaction_counts: TransactionCountsTable;
  spend_days: SpendDaysTable;
  console_sessions: ConsoleSessionsTable;
  console_signin_codes: ConsoleSigninCodesTable;
  console_one_time_views: ConsoleOneTimeViewsTable;
  status_history: StatusHistoryTable;
  evidence: EvidenceTable;
  evidence_heads: EvidenceHeadsTable;
  spend_windows: SpendWindowsTable;
  token_lineage: TokenLineageTable;
  spending_refusals: SpendingRefusalsTable;
  webhook_endpoints: WebhookEndpointsTable;
  webhook_outbox: WebhookOutboxTable;
  webhook_deliveries: WebhookDeliveriesTable;
  admin_credentials: AdminCredentialsTable;
  return_watch: ReturnWatchTable;
  provider_refunds: ProviderRefundsTable;
  audit_log: AuditLogTable;
}

/** Per off-ramp: how far the return watch has read its changed payouts, and who reads now (migration 0019). */
export interface ReturnWatchTable {
  provider: string;
  /** The provider's `updated_after` cursor, in ms of its clock; null before the first pass. */
  cursor_ms: number | null;
  /** Set while the list overflowed: every watched payment not read since then is read directly. */
  sweep_from: string | null;
  lease_owner: string | null;
  lease_until: string | null;
}

/** USDC an off-ramp sent back to a project wallet, seen on-chain (never a deposit; migration 0019). */
export interface ProviderRefundsTable {
  chain: string;
  tx_hash: string;
  log_index: number;
  project_id: string;
  from_address: string;
  amount_micros: number;
  block_number: number;
  seen_at: string;
}

/** Where a project's events are sent (migration 0012, webhookOutbox.ts). */
export interface WebhookEndpointsTable {
  id: string;
  project_id: string;
  url: string;
  /** ",a,b," of the event types wanted, or null for all. */
  events: string | null;
  /** The signing secret, encrypted (services/webhooks/secretBox.ts); never the secret itself. */
  secret_box: string;
  created_at: string;
  /** Set when every delivery failed for days, or the endpoint was deleted; nothing is written or sent meanwhile. */
  disabled_at: string | null;
  disabled_reason: string | null;
  /** The first failed attempt since the last delivered one; null while healthy. */
  failing_since: string | null;
  deleted_at: string | null;
}

/** The outbox: one event per reported state change, written by triggers in the change's transaction. */
export interface WebhookOutboxTable {
  seq: Generated<number>;
  id: string; // the Standard Webhooks message id (`webhook-id`)
  project_id: string;
  type: string;
  /** The transaction the event is about (a payment's id, or a deposit's `usdc_fund` transaction id). */
  object_id: string;
  /** The status the change set, shown in the payload whatever the status is when it is sent. */
  status: string;
  occurred_at: string;
  /** The body, rendered at the first attempt and kept so every attempt sends the same bytes. */
  payload: string | null;
}

/** One row per (event, endpoint): its attempts and lease. */
export interface WebhookDeliveriesTable {
  event_id: string;
  endpoint_id: string;
  state: string; // pending | delivered | failed
  attempts: number;
  next_attempt_at: string;
  lease_owner: string | null;
  lease_until: string | null;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
}

export interface ConsoleSessionsTable {
  id_hash: string; // sha256 hex of the session id; the id itself lives only in the browser's cookie
  kind: string; // operator | token
  token_id: string | null;
  /** Operator sessions: the admin credential signed in with (migration 0013_admin_sessions); revoking it ends them. */
  admin_credential_id?: string | null;
  created_at: string;
  expires_at: string;
}

/** Every status transition a webhook event reports, for every project (migration 0024, webhookOutbox.ts). */
export interface StatusHistoryTable {
  seq: Generated<number>;
  project_id: string;
  object_id: string; // a payment's id, or a deposit's transaction id
  type: string; // the webhook event type: payment.created, payment.processing, …, deposit.credited
  status: string; // the object's status after the change
  at: string;
}

/** What a console form created, shown once (migration 0024): sealed, bound to a session, deleted when read. */
export interface ConsoleOneTimeViewsTable {
  id_hash: string; // sha256 hex of the view's id; the id itself is only in the page's address
  session_hash: string; // sha256 hex of the session id that created it
  project_id: string;
  kind: string; // token | webhook
  sealed: string; // AES-256-GCM box (services/webhooks/secrets.ts) of what the page shows
  expires_at: string;
}

export interface ConsoleSigninCodesTable {
  code_hash: string;
  token_id: string;
  expires_at: string;
}

/** One record of a payment's evidence, hash-chained per project (migration 0030, evidence.ts). */
export interface EvidenceTable {
  project_id: string;
  seq: number; // 1, 2, … per project, no gaps
  payment_id: string;
  kind: string; // created | a status | approval_<decision> | progress (a rail stage, a transaction, a provider's id)
  at: string;
  body: string; // JSON text of the payment as the change left it; hashed as stored
  prev_hash: string; // the project's previous record's hash (64 zeros for the first)
  hash: string; // sha256 hex of prev_hash, seq, project_id, payment_id, kind, at, body joined by newlines
}

/** Each project's last evidence record: the chain's head, moved in the same transaction as the record. */
export interface EvidenceHeadsTable {
  project_id: string;
  seq: number;
  hash: string;
}
