/**
 * `get_transaction` → `GET /v1/transactions/{id}`: one payment as it is now: its status, its on-chain hash, a
 * failure's reason, and, for a payment that waits for a person, its `approval` (required, approved, denied or
 * expired, and until when). The way to follow a payment after `pay` answered.
 */
import { z } from "zod";
import { TransactionDetail, ApprovalState } from "@agentwallet/api";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

export const getTransaction = defineTool({
  name: "get_transaction",
  title: "Get one transaction",
  description:
    "One payment or other transaction of this wallet as it is now, by the `id` a pay answer gave: `status` (pending, " +
    "processing, completed, failed, reversed), `tx_hash`, `failure_code`/`failure_message` when it failed, and for a " +
    "payment above the token's approval threshold `approval`: `required` while it waits for a person (until " +
    "`expires_at`; then it fails and is credited back), `approved` (it is being sent), `denied` or `expired`. Use it " +
    "to follow a payment that was not final when pay answered.",
  access: "read",
  inputSchema: z.strictObject({ id: z.string().min(1).max(100).describe("The transaction's id, e.g. the `id` of a pay answer (txn_…).") }),
  outputSchema: inlined(TransactionDetail).extend({ approval: inlined(ApprovalState).optional() }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async (args, ctx) => {
    try {
      const { data } = await ctx.client.getTransaction(args.id);
      const notes = data.approval?.status === "required" ? [`Waiting for a person's approval until ${data.approval.expires_at}; call get_transaction again later.`] : [];
      return toolSuccess(data, notes);
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
