/**
 * What the console needs from the service, as one port. The server answers it with the console's use cases
 * (packages/server/src/services/console/), which reuse the service functions the API and the CLI use, so a
 * permission or a control has one rule wherever a person or an agent acts. Shapes are the wire contract's (`@agentwallet/api`).
 */
import type { Balance, DepositAddress, Permission, Transaction, TransactionList } from "@agentwallet/api";

/** An admin credential's role: `viewer` reads everything; `approver` also decides waiting payments; `admin` does everything. */
export type OperatorRole = "viewer" | "approver" | "admin";

/**
 * Who is signed in: an operator (every project; what they may change is their credential's `role`), or one
 * project's API token with its permissions. `manage`: whether the token may create, change and revoke tokens and
 * decide approvals (the server's rule, services/tokens.ts `mayManageProject`); `decide`: whether it may approve
 * or deny waiting payments (`mayDecideApprovals`: not when the project has its own approval threshold).
 * `ip`: the client's address of the request, for the audit log (set by the routes, never stored in the session).
 */
export type Viewer = (
  | { kind: "operator"; credentialId: string; name: string; role: OperatorRole }
  | { kind: "token"; projectId: string; tokenId: string; permissions: Permission[]; manage: boolean; decide: boolean }
) & { ip?: string };

export type Session = { id: string; csrf: string; viewer: Viewer; expiresAt: string };

export type ProjectSummary = { id: string; name: string; plan: string; paused: boolean; created_at: string };

/** The balance as the overview shows it: the API's fields plus what is held for open payments. */
export type Overview = Balance & { held: number };

/** Spend of one UTC day on one rail, in micro-USDC (bank payments converted at 1 cent = 10,000 micro-USDC). */
export type DailySpend = { day: string; rail: "x402" | "usdc_transfer" | "fiat"; amount_micros: number };

/** The Spend page's period: the current UTC day, week (from Monday) or month, the windows limits use. */
export type SpendPeriod = "day" | "week" | "month";

/** What was spent in a period under one name (an agent, a counterparty, a rail): amounts, fees, payments. */
export type SpendLine = { key: string; label: string; amount_micros: number; fee_micros: number; payments: number };

/** A token's limit window now (its `GET /v1/limits` window) and, at its rate so far, when it reaches its limit (null: not in this window). */
export type BurnWindow = LimitWindow & { reached_at: string | null };

/** Spend of a project in one period, counted from the day counters the limit windows are summed from. */
export type SpendReport = {
  period: SpendPeriod;
  window_start: string;
  window_end: string;
  /** The time the figures were read, for the projections. */
  as_of: string;
  total: { amount_micros: number; fee_micros: number; payments: number };
  by_agent: SpendLine[];
  by_counterparty: (SpendLine & { rail: Rail })[];
  by_rail: SpendLine[];
  /** Amounts plus fees per UTC day of the period, oldest first, days without spend included. */
  by_day: { day: string; amount_micros: number; fee_micros: number }[];
  /** Each active token with limits: its own daily, weekly and monthly windows as `GET /v1/limits` shows them. */
  burn: { token_id: string; label: string; windows: BurnWindow[] }[];
};

export type TransactionQuery = {
  limit: number;
  /** Filters: the API's `GET /v1/transactions` parameters. */
  type?: string[];
  status?: string[];
  created_after?: string;
  created_before?: string;
  starting_after?: string;
};

/** The console's list filters (query parameters of its list and its CSV export), as the person gave them. */
export type ListFilters = {
  type?: string[];
  status?: string[];
  created_after?: string;
  created_before?: string;
  /** A token id: that agent's payments. */
  agent?: string;
  /** With `agent`: its sub-agents' (child tokens', at every depth) payments too. */
  sub_agents?: boolean;
  rail?: Rail[];
  /** Text the counterparty contains: a host, a path, an address or part of one, a bank holder's name. */
  counterparty?: string;
  /** Dollars, inclusive bounds. */
  min_usd?: string;
  max_usd?: string;
};

/** Who a transaction was with: an x402 target, an address, a bank account holder (account masked), or a deposit's sender. */
export type Counterparty =
  | { kind: "x402"; host: string; path: string }
  | { kind: "address"; address: string }
  | { kind: "bank"; holder: string; account: string | null }
  | { kind: "sender"; address: string };

/** A row of the console's list: a payment with its fee, or a deposit. */
export type ListedTransaction = {
  id: string;
  type: string;
  status: string;
  rail: Rail | null;
  /** In micro-USD (bank cents × 10,000), so every row adds up alike. */
  amount_micros: number;
  fee_micros: number | null;
  description: string | null;
  counterparty: Counterparty | null;
  /** The token that paid: its name, else its prefix. */
  agent: { id: string; name: string | null; prefix: string } | null;
  created_at: string;
  completed_at: string | null;
  failure_code: string | null;
  failure_message: string | null;
  tx_hash: string | null;
};

/** One page of the list: its rows, its place (1-based position of its first row) and the way on either side. */
/**
 * A page of the list with its place. Where rows are counted by reading them, a count stops at a cap: then
 * `total_capped` (the list has more than `total` rows) and `position_capped` (more than `position - 1`
 * rows come before the page) are true.
 */
export type ListPage = { rows: ListedTransaction[]; total: number; total_capped: boolean; position: number; position_capped: boolean; has_newer: boolean; has_older: boolean };

/** An agent as the filter names it. */
export type AgentName = { id: string; name: string | null; prefix: string; parent_id: string | null; revoked: boolean };

export type Interval = "per_payment" | "daily" | "weekly" | "monthly" | "all_time";
export type Rail = "x402" | "usdc_transfer" | "fiat";

/** Spending controls as the admin API and `GET /v1/limits` write them (services/spendingControls.ts). */
export type Controls = {
  spending_limits: { amount_usd: number; interval: Interval }[];
  /** null: any recipient. Hosts (`api.example.com`, `*.example.com`), addresses, `bank:ROUTING:ACCOUNT`. */
  allowed_recipients: string[] | null;
  blocked_recipients: string[];
  /** null: every rail. */
  allowed_rails: Rail[] | null;
  approval_above_usd: number | null;
};

/** One limit window now, as `GET /v1/limits` shows it. */
export type LimitWindow = {
  /** Whose limit: the token's own, its allowance, an ancestor's (`token_id`) or its allowance, the project's. */
  scope: "token" | "project" | "allowance" | "ancestor" | "ancestor_allowance";
  token_id?: string;
  interval: Exclude<Interval, "per_payment">;
  window_start: string | null;
  window_end: string | null;
  limit_usd: number;
  spent_usd: number;
  remaining_usd: number;
};

export type TokenSummary = {
  id: string;
  display_prefix: string;
  /** The name its creator gave (child tokens usually have one), or null. */
  name: string | null;
  /** The token that created it (a child token), or null for a token the operator issued. */
  parent_id: string | null;
  /** 0 for an operator's token, 1 for its child, … */
  depth: number;
  permissions: Permission[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  /** The token's own controls (null: none); the project's apply as well. */
  controls: Controls | null;
  /** Spend now against every window that binds the token (its own, its allowance, its ancestors', the project's): its `GET /v1/limits`. */
  windows: LimitWindow[];
};

/** One step of a transaction's way to its status; a decision's also carries its reason and, when an operator decided, their name. */
export type HistoryEntry = { at: string; status: string; text: string; reason?: string; decided_by_name?: string };

/** A payment the spending controls refused; `amount_micros` is the amount asked. */
export type RefusalItem = { at: string; token_id: string | null; token_name: string | null; token_prefix: string | null; code: string; detail: string; rail: string; recipient: string; amount_micros: number | null; limit: RefusalLimit | null };

/**
 * What a `spending_limit_exceeded` refusal measured, in micro-USDC, as the service recorded it (null on other
 * codes and on refusals recorded before it did): the rule; whose it is (the paying agent, an agent above it,
 * named by `owner`, or the project); the limit; what the window had spent and what remained (null for
 * per_payment and for a payment above the whole limit).
 */
export type RefusalLimit = {
  rule: "per_payment" | "daily" | "weekly" | "monthly" | "all_time" | "allowance";
  level: "token" | "ancestor" | "project";
  /** The ancestor whose rule it is (null for the others, or a token no longer listed). */
  owner: { id: string; name: string | null; prefix: string } | null;
  limit_micros: number;
  spent_micros: number | null;
  remaining_micros: number | null;
};

export type WebhookEndpoint = {
  id: string;
  url: string;
  /** null: every event type. */
  events: string[] | null;
  /** enabled | disabled */
  state: string;
  disabled_at: string | null;
  disabled_reason: string | null;
  failing_since: string | null;
  created_at: string;
};

/** One event's delivery to one endpoint: its attempts so far and the last one's outcome. */
export type WebhookDelivery = {
  event_id: string;
  endpoint_id: string;
  url: string;
  type: string;
  object_id: string;
  occurred_at: string;
  state: "pending" | "delivered" | "failed";
  attempts: number;
  next_attempt_at: string;
  last_attempt_at: string | null;
  last_status: number | null;
  last_error: string | null;
  delivered_at: string | null;
};

/** What a form created and its page shows once: a new token, or a new webhook endpoint with its signing secret. */
export type OneTimeViewKind = "token" | "webhook";

export type NewToken = { id: string; token: string; permissions: Permission[]; expires_at: string | null };

/** A payment that waits for a person, or one a person decided. */
export type ApprovalItem = {
  id: string;
  rail: Rail;
  amount_micros: number;
  recipient: string;
  description: string | null;
  token_id: string | null;
  token_prefix: string | null;
  status: string;
  created_at: string;
  approval: "awaiting" | "approved" | "denied" | "expired";
  approval_until: string | null;
  /** Who decided: an admin credential's id, a token's id, or cli:<user>. */
  decided_by: string | null;
  /** Their name when they decided (the credential's name, the token's prefix, the CLI's user). */
  decided_by_name: string | null;
  decided_at: string | null;
  /** The reason the decider gave, if any. */
  reason: string | null;
  tx_hash: string | null;
};

/** One entry of the audit log: who changed what, from which address, before → after. */
export type AuditItem = {
  seq: number;
  at: string;
  actor: { id: string; name: string; role: OperatorRole | null; ip: string | null };
  action: string;
  project_id: string | null;
  target_id: string;
  before: unknown;
  after: unknown;
};

export interface ConsoleBackend {
  /** A project token's identity if it is well formed, known, unrevoked and unexpired; else null. */
  verifyToken(token: string): Promise<{ tokenId: string; projectId: string } | null>;
  /** The admin credential's id if the text is an active admin credential of this deployment; else null. */
  verifyAdminCredential(secret: string): Promise<string | null>;
  /** Exchanges a one-time sign-in code (printed by the sandbox banner) for the token it names, once. */
  redeemSignInCode(code: string): Promise<{ tokenId: string; projectId: string } | null>;

  createSession(viewer: { kind: "operator"; credentialId: string } | { kind: "token"; tokenId: string }): Promise<{ id: string; csrf: string; expiresAt: string }>;
  /** The session's viewer as of now (a revoked or expired token, or a revoked admin credential, ends its sessions), or null. */
  getSession(id: string): Promise<Session | null>;
  deleteSession(id: string): Promise<void>;

  listProjects(): Promise<ProjectSummary[]>;
  getProject(projectId: string): Promise<ProjectSummary | null>;
  overview(projectId: string): Promise<Overview>;
  depositAddress(projectId: string): Promise<DepositAddress>;
  spendByDay(projectId: string, days: number): Promise<DailySpend[]>;
  /** Spend by agent, counterparty, rail and day in the current period, and each limited agent's burn against its limits. */
  spendReport(projectId: string, period: SpendPeriod): Promise<SpendReport>;
  listTransactions(projectId: string, query: TransactionQuery): Promise<TransactionList>;
  getTransaction(projectId: string, id: string): Promise<Transaction | null>;
  /** The console's list: a page after `starting_after` or before `ending_before` (ids of listed rows). Bad filters: 400 `invalid_query`. */
  listPage(projectId: string, filters: ListFilters, page: { limit: number; starting_after?: string; ending_before?: string }): Promise<ListPage>;
  /** Every row the filters match, newest first, page by page (for the CSV export: never the whole list at once). */
  exportPages(projectId: string, filters: ListFilters): AsyncIterable<ListedTransaction[]>;
  /** A payment (with its fee, agent and counterparty) or a deposit as the list shows it; null for a fee row or an unknown id. */
  listedTransaction(projectId: string, id: string): Promise<ListedTransaction | null>;
  /** The project's tokens by name, for the agent filter and the transaction page. */
  agentNames(projectId: string): Promise<AgentName[]>;
  listTokens(projectId: string): Promise<TokenSummary[]>;
  getToken(projectId: string, tokenId: string): Promise<TokenSummary | null>;
  /** The project's own controls (every token obeys them too). */
  projectControls(projectId: string): Promise<Controls | null>;

  // Changes: the viewer is passed so the server applies its own rule (the console also hides what it refuses).
  /** A new token of this project with these permissions and controls; its text is in this return only. */
  createToken(viewer: Viewer, projectId: string, input: { permissions: Permission[]; expiresInDays: number | null; controls: Controls }): Promise<NewToken>;
  /** Replaces the fields given of the token's controls (the others keep theirs); false if the project has no such token. */
  updateTokenControls(viewer: Viewer, projectId: string, tokenId: string, controls: Partial<Controls>): Promise<boolean>;
  /** False if the project has no such active token. */
  revokeToken(viewer: Viewer, projectId: string, tokenId: string): Promise<boolean>;

  /** Payments waiting for a person (oldest first) and the latest decided ones (newest first). */
  listApprovals(projectId: string): Promise<{ awaiting: ApprovalItem[]; decided: ApprovalItem[] }>;
  /** Records the viewer's decision; `not_awaiting` with the reason when it is too late or not this project's. */
  decideApproval(viewer: Viewer, projectId: string, paymentId: string, decision: "approved" | "denied", reason: string | null): Promise<{ ok: true } | { ok: false; detail: string }>;
  /** The audit log, newest first: one project's entries, or (null) every entry; a page below `before` (a `seq`). */
  listAudit(projectId: string | null, before: number | null, limit: number): Promise<{ entries: AuditItem[]; nextBefore: number | null }>;
  /** The approval of one payment, if it had one. */
  getApproval(projectId: string, paymentId: string): Promise<ApprovalItem | null>;
  /** A transaction's way to its status, oldest first: the transitions its webhooks report, with what the ledger records of each. */
  transactionHistory(projectId: string, transactionId: string): Promise<HistoryEntry[]>;
  /** Payments the controls refused lately (nothing was held), of one token or the whole project, newest first. */
  listRefusals(projectId: string, tokenId: string | null, limit: number): Promise<RefusalItem[]>;

  /** The event types an endpoint may ask for (services/webhooks). */
  webhookEventTypes: readonly string[];
  listWebhooks(projectId: string): Promise<WebhookEndpoint[]>;
  /** An endpoint of this project (deleted ones are gone) with its newest deliveries. */
  getWebhook(projectId: string, endpointId: string): Promise<{ endpoint: WebhookEndpoint; deliveries: WebhookDelivery[] } | null>;
  /** The deliveries of the events about one transaction (its payment's or deposit's), newest first. */
  transactionDeliveries(projectId: string, transactionId: string): Promise<WebhookDelivery[]>;
  /** A new endpoint; its signing secret is in this return only. */
  createWebhook(viewer: Viewer, projectId: string, input: { url: string; events: string[] }): Promise<{ endpoint: WebhookEndpoint; secret: string }>;
  deleteWebhook(viewer: Viewer, projectId: string, endpointId: string): Promise<boolean>;
  enableWebhook(viewer: Viewer, projectId: string, endpointId: string): Promise<boolean>;
  /** Sends an event of this project again to its enabled endpoints; how many deliveries were scheduled (null: no such event). */
  redeliverWebhook(viewer: Viewer, projectId: string, eventId: string): Promise<number | null>;

  /**
   * Keeps what a form created for its page, to be shown once (`takeOneTimeView`) to the session that created it,
   * for a few minutes, never in the clear; returns the view's id for the page's address.
   */
  keepOneTimeView(session: Session, projectId: string, kind: OneTimeViewKind, shown: Record<string, unknown>): Promise<string>;
  /** What `keepOneTimeView` kept, once, to the session that kept it; null after that, elsewhere, or once expired. */
  takeOneTimeView(session: Session, projectId: string, kind: OneTimeViewKind, viewId: string): Promise<Record<string, unknown> | null>;

  /** Sandbox only: deposit test USDC to the project's wallet on the local chain. */
  fundSandbox?(projectId: string, amountUsdc: number): Promise<void>;
}
