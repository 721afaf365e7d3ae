/** `get_spending_limits` → `GET /v1/limits`: the token's spending controls, and per window what is spent and what remains. */
import { z } from "zod";
import { LimitWindow, Limits, SpendingControls, SpendingLimit } from "@agentwallet/api";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

const controls = inlined(SpendingControls).extend({ spending_limits: z.array(inlined(SpendingLimit)) });

export const getSpendingLimits = defineTool({
  name: "get_spending_limits",
  title: "Get spending limits",
  description:
    "The spending controls this token pays under, set by the user or an operator, and for each limited window what is " +
    "already spent and what remains now (US dollars; UTC calendar windows). `token` is this token's own controls, " +
    "`project` those every token of the project obeys too (the stricter wins); null means none. Call it before a " +
    "payment that may not fit: a payment above what remains, to a recipient not allowed, or by a rail not allowed is " +
    "refused, and USDC or bank payments above `approval_above_usd` wait for a person's approval.",
  access: "read",
  inputSchema: z.strictObject({}),
  outputSchema: inlined(Limits).extend({ token: controls.nullable(), project: controls.nullable(), windows: z.array(inlined(LimitWindow)) }),
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async (_args, ctx) => {
    try {
      return toolSuccess((await ctx.client.getLimits()).data);
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
