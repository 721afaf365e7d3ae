/** `list_transactions` → `GET /v1/transactions`: one page of the project's transactions, newest first. */
import { ListTransactionsQuery, Transaction, TransactionList, type TransactionStatus, type TransactionType } from "@agentwallet/api";
import { z } from "zod";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

export const listTransactions = defineTool({
  name: "list_transactions",
  title: "List wallet transactions",
  description:
    "Transactions of this project's wallet, newest first, one page at a time (`limit` 1-200, default 50; `offset` to " +
    "page on; `has_more` says whether more exist). `amount` is micro-USDC when `currency` is usdc (1 USDC = 1,000,000) " +
    "and cents when it is usd. Each payment lists twice: its rail's transaction (x402_payment, usdc_transfer or " +
    "payment) and its platform_fee. Use it to see whether a payment that answered `processing` has completed. Filters: `type`, " +
    "`status` (comma-separated), `created_after`/`created_before` (ISO 8601); `starting_after` (the last id you got) " +
    "pages on through a filtered list.",
  access: "read",
  inputSchema: ListTransactionsQuery,
  outputSchema: TransactionList.extend({ transactions: z.array(inlined(Transaction)) }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async (args, ctx) => {
    try {
      const list = <T extends string>(v: string | undefined) => (v === undefined ? undefined : (v.split(",") as T[]));
      const query = {
        limit: args.limit,
        offset: args.offset,
        type: list<TransactionType>(args.type),
        status: list<TransactionStatus>(args.status),
        created_after: args.created_after,
        created_before: args.created_before,
        starting_after: args.starting_after,
      };
      return toolSuccess((await ctx.client.listTransactions(query)).data);
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
