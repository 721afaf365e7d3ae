/** `get_balance` → `GET /v1/balance`: what the wallet holds, in micro-USDC. */
import { z } from "zod";
import { Balance } from "@agentwallet/api";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

export const getBalance = defineTool({
  name: "get_balance",
  title: "Get wallet balance",
  description:
    "Balance of this project's USDC wallet. Amounts are integers in micro-USDC (1 USDC = 1,000,000 micro-USDC = $1.00): " +
    "`available` is spendable now, `pending` is deposits seen on-chain but not yet confirmed. " +
    "Check it before paying: a payment needs its amount plus a 1-2% platform fee available.",
  access: "read",
  inputSchema: z.strictObject({}),
  outputSchema: inlined(Balance),
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async (_args, ctx) => {
    try {
      return toolSuccess((await ctx.client.getBalance()).data);
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
