/**
 * Who is acting: the project and permissions of an authenticated API token, and the rules every use case
 * applies to it. Authentication itself (reading the bearer token) is the web layer's (http/auth.ts).
 */
import type { Permission } from "@agentwallet/api";
import { forbidden } from "./errors.ts";
import type { Plan } from "./project.ts";
import type { PrincipalControls } from "./spending.ts";

/** The project's balance as read in the authenticating statement, at the start of this request. */
export type BalanceSnapshot = { availableMicros: number; pendingMicros: number; totalFundedMicros: number; totalSpentMicros: number; walletAddress: string | null };

export type Principal = { tokenId: string; projectId: string; permissions: Set<Permission>; paused: boolean; plan: Plan; balance: BalanceSnapshot; controls?: PrincipalControls };

export function requirePermission(p: Principal, ...needed: Permission[]): void {
  const missing = needed.filter((n) => !p.permissions.has(n));
  if (missing.length) {
    throw forbidden("permission_denied", `This token lacks the '${missing.join("' and '")}' permission${missing.length > 1 ? "s" : ""} needed here. Use a token created with --permissions ${[...new Set([...p.permissions, ...missing])].join(",")}.`);
  }
}

export function requireActive(p: Principal): void {
  if (p.paused) throw forbidden("project_paused", "This project is paused: payments are refused until an operator resumes it (`agentwallet projects resume`).");
}
