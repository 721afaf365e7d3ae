/**
 * `x402_pay` (deprecated) → `POST /v1/x402/pay`. The endpoint takes no idempotency key, so unlike the other
 * payment tools a retried call can pay twice; the description says so and points at `pay`.
 */
import { X402PayRequest, X402PayResponse } from "@agentwallet/api";
import { formatUsd } from "../money.ts";
import { runPayment } from "../payments.ts";
import { defineTool, inlined } from "../tool.ts";

export const x402Pay = defineTool({
  name: "x402_pay",
  title: "Pay an x402 URL (deprecated)",
  description:
    "DEPRECATED: use pay with a URL recipient. Requests `url` and, if it answers HTTP 402, pays the price it asks in " +
    "USDC, up to max_amount_usdc; returns the target's reply with `payment_amount` and `fee_amount` in micro-USDC " +
    "(1 USDC = 1,000,000). Not idempotent: this endpoint takes no idempotency key, so a retried call can pay twice.",
  access: "payment",
  inputSchema: X402PayRequest.extend({
    method: X402PayRequest.shape.method.describe("HTTP method for the request to the URL, default GET."),
    headers: X402PayRequest.shape.headers.describe("Extra HTTP headers for the request to the URL."),
    body: X402PayRequest.shape.body.describe("Request body for POST or PUT."),
    max_amount_usdc: X402PayRequest.shape.max_amount_usdc.describe(
      "The most the URL may charge, in micro-USDC (1 USDC = 1,000,000; 10000 = $0.01), 1 to 100,000,000. " +
        "A higher price is refused with 400 and nothing is paid.",
    ),
  }),
  outputSchema: inlined(X402PayResponse),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
  handler: async (args, ctx, extra) =>
    runPayment(ctx, extra, {
      tool: "x402_pay",
      amountMicrosMax: args.max_amount_usdc,
      summary: `an x402 payment to ${args.url} of up to ${formatUsd(args.max_amount_usdc)} in USDC`,
      idempotency: undefined,
      send: () => ctx.client.x402Pay(args),
    }),
});
