/**
 * Who is acting: the project and permissions of an authenticated API token, and the rules every use case
 * applies to it. Authentication itself (reading the bearer token) is the web layer's (http/auth.ts).
 */
import type { Permission } from "@agentwallet/api";
import { forbidden } from "./errors.ts";
import type { Plan } from "./project.ts";
import type { PrincipalControls } from "./spending.ts";

/** The project's balance as read in the authenticating statement, at the start of this request. */
export type BalanceSnapshot = {
  availableMicros: number;
  pendingMicros: number;
  totalFundedMicros: number;
  totalSpentMicros: number;
  walletAddress: string | null;
  /** Since when USDC's blacklister has frozen the wallet (as last seen on-chain); null while it can move money. */
  walletFrozenAt: string | null;
};

/**
 * `walletIndex`: the project's wallet in custody (its HD index, fixed when the project is created), read with the
 * token, so a payment signed on the request's path needs no read of the project.
 */
export type Principal = { tokenId: string; projectId: string; permissions: Set<Permission>; paused: boolean; plan: Plan; walletIndex: number; balance: BalanceSnapshot; controls?: PrincipalControls };

export function requirePermission(p: Principal, ...needed: Permission[]): void {
  const missing = needed.filter((n) => !p.permissions.has(n));
  if (missing.length) {
    throw forbidden("permission_denied", `This token lacks the '${missing.join("' and '")}' permission${missing.length > 1 ? "s" : ""} needed here. Use a token created with --permissions ${[...new Set([...p.permissions, ...missing])].join(",")}.`);
  }
}

export function requireActive(p: Principal): void {
  if (p.paused) throw forbidden("project_paused", "This project is paused: payments are refused until an operator resumes it (`agentwallet projects resume`).");
  if (p.balance.walletFrozenAt !== null) {
    throw forbidden(
      "wallet_frozen",
      `This project's wallet ${p.balance.walletAddress} has been frozen by USDC's issuer since ${p.balance.walletFrozenAt}: no payment from it can move money, so none is accepted. Retrying will not help; the operator must have the freeze lifted (payments resume by themselves once it is).`,
    );
  }
}
