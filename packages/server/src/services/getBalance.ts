/** GET /v1/balance: the project's balance row, read fresh (never cached). */
import type { Balance } from "@agentwallet/api";
import type { AppContext } from "../context.ts";

export async function getBalance(ctx: AppContext, projectId: string): Promise<Balance> {
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
