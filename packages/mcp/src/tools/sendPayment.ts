/** `send_payment` (deprecated) → `POST /v1/payments`: USD by ACH to a US bank account, amount in cents. */
import { BankRecipient, LegacyPaymentRequest, LegacyPaymentResponse } from "@agentwallet/api";
import { centsToMicros, formatUsd } from "../money.ts";
import { chooseIdempotencyKey, idempotencyKeyDescription, keyCharacters, runPayment } from "../payments.ts";
import { defineTool, inlined } from "../tool.ts";

export const sendPayment = defineTool({
  name: "send_payment",
  title: "Send bank payment (deprecated)",
  description:
    "DEPRECATED: use pay with a bank details recipient. Sends USD by ACH from this project's wallet to a US bank " +
    "account; `amount` is in cents (2500 = $25.00). Arrives in 2-3 business days; a platform fee of 1-2% is charged on top.",
  access: "payment",
  inputSchema: LegacyPaymentRequest.extend({
    amount: LegacyPaymentRequest.shape.amount.describe("Amount in US cents, 1 to 100,000,000 (2500 = $25.00)."),
    recipient: inlined(BankRecipient).describe("The US bank account to pay."),
    idempotency_key: LegacyPaymentRequest.shape.idempotency_key.describe(`${idempotencyKeyDescription} ${keyCharacters}`),
  }),
  outputSchema: inlined(LegacyPaymentResponse),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  handler: async (args, ctx, extra) => {
    const idempotency = chooseIdempotencyKey(ctx, "send_payment", args);
    const body: LegacyPaymentRequest = { ...args, idempotency_key: idempotency.key };
    const amountMicros = centsToMicros(args.amount);
    return runPayment(ctx, extra, {
      tool: "send_payment",
      amountMicrosMax: amountMicros,
      summary: `${formatUsd(amountMicros)} by ACH to ${args.recipient.name} (account ending ${args.recipient.account_number.slice(-4)})`,
      idempotency,
      send: () => ctx.client.sendPayment(body),
    });
  },
});
