/**
 * GET /v1/balance: the project's balance row, read fresh, never cached: the same statement that
 * authenticated this request read it (`snapshot`), or it is read now.
 */
import type { Balance } from "@agentwallet/api";
import type { AppContext } from "../context.ts";
import type { BalanceSnapshot } from "../http/auth.ts";

export async function getBalance(ctx: AppContext, projectId: string, snapshot?: BalanceSnapshot): Promise<Balance> {
  if (snapshot) {
    return {
      project_id: projectId,
      currency: "usdc",
      available: snapshot.availableMicros,
      pending: snapshot.pendingMicros,
      total_funded: snapshot.totalFundedMicros,
      total_spent: snapshot.totalSpentMicros,
      wallet_address: snapshot.walletAddress,
    };
  }
  const b = await ctx.ledger.getBalance(projectId);
  if (!b) throw new Error(`balance row missing for project ${projectId}`);
  return {
    project_id: projectId,
    currency: "usdc",
    available: b.available_micros,
    pending: b.pending_micros,
    total_funded: b.total_funded_micros,
    total_spent: b.total_spent_micros,
    wallet_address: b.wallet_address,
  };
}
