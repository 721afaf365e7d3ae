/**
 * What the console needs from the service, as one port. The server implements it over the same service
 * functions the API and the CLI use (packages/server/src/http/console.ts), so a permission or a control has
 * one rule wherever a person or an agent acts. Shapes are the wire contract's (`@agentwallet/api`).
 */
import type { Balance, DepositAddress, Permission, Transaction, TransactionList } from "@agentwallet/api";

/** Who is signed in: the operator (every project), or one project's API token with its permissions. */
export type Viewer =
  | { kind: "operator" }
  | { kind: "token"; projectId: string; tokenId: string; permissions: Permission[] };

export type Session = { id: string; csrf: string; viewer: Viewer; expiresAt: string };

export type ProjectSummary = { id: string; name: string; plan: string; paused: boolean; created_at: string };

/** The balance as the overview shows it: the API's fields plus what is held for open payments. */
export type Overview = Balance & { held: number };

/** Spend of one UTC day on one rail, in micro-USDC (bank payments converted at 1 cent = 10,000 micro-USDC). */
export type DailySpend = { day: string; rail: "x402" | "usdc_transfer" | "fiat"; amount_micros: number };

export type TransactionQuery = {
  limit: number;
  /** Filters: the API's `GET /v1/transactions` parameters. */
  type?: string[];
  status?: string[];
  created_after?: string;
  created_before?: string;
  starting_after?: string;
};

export type TokenSummary = {
  id: string;
  display_prefix: string;
  permissions: Permission[];
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
};

export interface ConsoleBackend {
  /** A project token's identity if it is well formed, known, unrevoked and unexpired; else null. */
  verifyToken(token: string): Promise<{ tokenId: string; projectId: string } | null>;
  /** Whether the text is the operator's admin credential. */
  verifyAdminCredential(secret: string): Promise<boolean>;
  /** Exchanges a one-time sign-in code (printed by the sandbox banner) for the token it names, once. */
  redeemSignInCode(code: string): Promise<{ tokenId: string; projectId: string } | null>;

  createSession(viewer: { kind: "operator" } | { kind: "token"; tokenId: string }): Promise<{ id: string; csrf: string; expiresAt: string }>;
  /** The session's viewer as of now (a revoked or expired token ends its sessions), or null. */
  getSession(id: string): Promise<Session | null>;
  deleteSession(id: string): Promise<void>;

  listProjects(): Promise<ProjectSummary[]>;
  getProject(projectId: string): Promise<ProjectSummary | null>;
  overview(projectId: string): Promise<Overview>;
  depositAddress(projectId: string): Promise<DepositAddress>;
  spendByDay(projectId: string, days: number): Promise<DailySpend[]>;
  listTransactions(projectId: string, query: TransactionQuery): Promise<TransactionList>;
  getTransaction(projectId: string, id: string): Promise<Transaction | null>;
  listTokens(projectId: string): Promise<TokenSummary[]>;

  /** Sandbox only: deposit test USDC to the project's wallet on the local chain. */
  fundSandbox?(projectId: string, amountUsdc: number): Promise<void>;
}
