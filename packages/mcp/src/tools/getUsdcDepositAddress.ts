/** `get_usdc_deposit_address` → `GET /v1/stablecoin/address`: where to send USDC to fund the wallet. */
import { z } from "zod";
import { DepositAddress } from "@agentwallet/api";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

export const getUsdcDepositAddress = defineTool({
  name: "get_usdc_deposit_address",
  title: "Get USDC deposit address",
  description:
    "The address that funds this wallet: USDC sent to it on the Base network is credited to the balance once the " +
    "deposit is confirmed on-chain. Send only USDC on Base: other tokens, or USDC on another network, can be lost " +
    "permanently. The address is created on the first call and stays the same afterwards.",
  access: "read",
  inputSchema: z.strictObject({}),
  outputSchema: inlined(DepositAddress),
  annotations: { readOnlyHint: true, openWorldHint: false },
  handler: async (_args, ctx) => {
    try {
      return toolSuccess((await ctx.client.getDepositAddress()).data);
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
