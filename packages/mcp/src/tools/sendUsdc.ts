/** `send_usdc` (deprecated) → `POST /v1/usdc/transfer`: USDC on Base to an address, amount in whole USDC. */
import { UsdcTransferRequest, UsdcTransferResponse } from "@agentwallet/api";
import { formatUsd, usdToMicrosCeil } from "../money.ts";
import { chooseIdempotencyKey, idempotencyKeyDescription, runPayment } from "../payments.ts";
import { defineTool, inlined } from "../tool.ts";

export const sendUsdc = defineTool({
  name: "send_usdc",
  title: "Send USDC on-chain (deprecated)",
  description:
    "DEPRECATED: use pay with a 0x address recipient. Sends USDC on Base from this project's wallet to `to_address`; " +
    "`amount_usdc` is in whole USDC, not micro-USDC (2.5 = 2.50 USDC, about $2.50). A platform fee of 1-2% is charged on top.",
  access: "payment",
  inputSchema: UsdcTransferRequest.extend({
    amount_usdc: UsdcTransferRequest.shape.amount_usdc.describe(
      "Amount in USDC, not micro-USDC (2.5 = 2.50 USDC), up to 6 decimals, at most 100,000.",
    ),
    idempotency_key: UsdcTransferRequest.shape.idempotency_key.describe(
      `${idempotencyKeyDescription} At most 255 characters.`,
    ),
  }),
  outputSchema: inlined(UsdcTransferResponse),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  handler: async (args, ctx, extra) => {
    const idempotency = chooseIdempotencyKey(ctx, "send_usdc", args);
    const body: UsdcTransferRequest = { ...args, idempotency_key: idempotency.key };
    const amountMicros = usdToMicrosCeil(args.amount_usdc);
    return runPayment(ctx, extra, {
      tool: "send_usdc",
      amountMicrosMax: amountMicros,
      summary: `${amountMicros === undefined ? "?" : formatUsd(amountMicros)} in USDC to ${args.to_address} on Base`,
      idempotency,
      send: () => ctx.client.sendUsdc(body),
    });
  },
});
