/**
 * GET /v1/balance: the project's balance row, read fresh and never cached — by the same statement that
 * authenticated this request (token → project → balance), so the answer costs no second round trip.
 */
import type { Balance } from "@agentwallet/api";
import type { Principal } from "../domain/principal.ts";

export function getBalance(principal: Principal): Balance {
  const b = principal.balance;
  return {
    project_id: principal.projectId,
    currency: "usdc",
    available: b.availableMicros,
    pending: b.pendingMicros,
    total_funded: b.totalFundedMicros,
    total_spent: b.totalSpentMicros,
    wallet_address: b.walletAddress,
  };
}
