/** GET /v1/transactions: newest first by creation time, `seq` as the stable tie-break. */
import type { TransactionList } from "@agentwallet/api";
import type { AppContext } from "../context.ts";

export async function listTransactions(ctx: AppContext, projectId: string, limit: number, offset: number): Promise<TransactionList> {
  const { rows, total } = await ctx.ledger.listTransactions(projectId, limit, offset);
  return {
    transactions: rows.map((r) => ({
      id: r.id,
      type: r.type as TransactionList["transactions"][number]["type"],
      status: r.status as TransactionList["transactions"][number]["status"],
      amount: r.amount,
      currency: r.currency,
      description: r.description,
      merchant_name: r.merchant_name,
      created_at: r.created_at,
      completed_at: r.completed_at,
    })),
    total_count: total,
    has_more: offset + rows.length < total,
  };
}
