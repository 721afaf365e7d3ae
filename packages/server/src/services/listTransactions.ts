/**
 * GET /v1/transactions: newest first. Without filters or a cursor, a page is a range of positions
 * (balances.ts), and after a cursor the positions below it; with filters, the ranges of transactionReads.ts,
 * newest first by creation time, and total_count counts the matching rows.
 */
import type { Transaction, TransactionList } from "@agentwallet/api";
import type { BalanceStore, TransactionReadStore } from "../ledger/ports.ts";
import { failureFields } from "./payments/render.ts";
import type { Cursor, ListedRow, TransactionFilter } from "../ledger/transactionReads.ts";

export type ListQuery = {
  limit: number;
  offset: number;
  /** Absent when the caller gave no filter. */
  filter?: TransactionFilter;
  cursor?: Cursor;
};

export async function listTransactions(ctx: { ledger: { balances: BalanceStore; transactions: TransactionReadStore } }, projectId: string, q: ListQuery): Promise<TransactionList> {
  if (!q.filter && !q.cursor) {
    const { rows, total } = await ctx.ledger.balances.listTransactions(projectId, q.limit, q.offset);
    return { transactions: rows.map(renderTransaction), total_count: total, has_more: q.offset + rows.length < total };
  }
  if (!q.filter) {
    // A cursor alone: the plain list's order (by position), continued below the cursor's row.
    const [page, total] = await Promise.all([ctx.ledger.transactions.listBefore(projectId, q.cursor!.pos, q.limit), ctx.ledger.balances.transactionCount(projectId)]);
    return { transactions: page.rows.map(renderTransaction), total_count: total, has_more: page.hasMore };
  }
  const [page, total] = await Promise.all([
    ctx.ledger.transactions.listFiltered(projectId, q.filter, { limit: q.limit, offset: q.offset, cursor: q.cursor }),
    ctx.ledger.transactions.countFiltered(projectId, q.filter),
  ]);
  return { transactions: page.rows.map(renderTransaction), total_count: total, has_more: page.hasMore };
}

/** A list item. `metadata` appears on a payment's own row only (null elsewhere). */
export function renderTransaction(r: Omit<ListedRow, "payment_id" | "metadata"> & { metadata?: string | null }): Transaction {
  return {
    id: r.id,
    type: r.type as Transaction["type"],
    status: r.status as Transaction["status"],
    amount: r.amount,
    currency: r.currency,
    description: r.description,
    merchant_name: r.merchant_name,
    created_at: r.created_at,
    completed_at: r.completed_at,
    ...failureFields({ status: r.status, failureCode: r.failure_code, failureReason: r.failure_reason }),
    metadata: r.metadata ? (JSON.parse(r.metadata) as Record<string, string>) : null,
  };
}
