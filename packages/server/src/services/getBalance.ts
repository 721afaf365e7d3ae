/**
 * GET /v1/balance: the project's balance row, read fresh and never cached — by the same statement that
 * authenticated this request (token → project → balance), so the answer costs no second round trip.
 * A wallet frozen by USDC's blacklister offers nothing as `available` (no payment from it can move
 * money); what it holds is `frozen_amount` until the freeze is lifted (decisions.md, "Frozen wallets").
 */
import type { Balance } from "@agentwallet/api";
import type { BalanceSnapshot, Principal } from "../domain/principal.ts";

export function getBalance(principal: Principal): Balance {
  return balanceOf(principal.projectId, principal.balance);
}

/** A project's balance as the API shows it, from its figures however they were read (the console reads them by project). */
export function balanceOf(projectId: string, b: BalanceSnapshot): Balance {
  return {
    project_id: projectId,
    currency: "usdc",
    available: b.walletFrozenAt === null ? b.availableMicros : 0,
    pending: b.pendingMicros,
    total_funded: b.totalFundedMicros,
    total_spent: b.totalSpentMicros,
    wallet_address: b.walletAddress,
    frozen: b.walletFrozenAt !== null,
    frozen_amount: b.walletFrozenAt === null ? 0 : b.availableMicros,
    frozen_since: b.walletFrozenAt,
  };
}
