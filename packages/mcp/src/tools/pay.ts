/**
 * `pay` → `POST /v1/pay`: one tool for the three rails; the recipient's shape picks the rail. Under a
 * per-payment cap, a URL payment without `max_amount_usdc` gets the cap as its maximum, so the target's
 * price can never exceed what the user allowed.
 */
import { BankRecipient, IdempotencyKey, limits, PayRequest, PayResponse, ProxiedResponse } from "@agentwallet/api";
import { z } from "zod";
import { formatUsd, usdToMicrosCeil } from "../money.ts";
import { chooseIdempotencyKey, idempotencyKeyDescription, keyCharacters, runPayment } from "../payments.ts";
import { defineTool, inlined } from "../tool.ts";

const [textRecipient] = PayRequest.shape.recipient.options;

export const pay = defineTool({
  name: "pay",
  title: "Pay (URL, USDC address or bank account)",
  description:
    "Pay from this project's USDC wallet. The recipient's shape picks the rail: an https URL pays for an HTTP API " +
    "that answers 402, by x402 or by the Machine Payments Protocol (MPP), whichever it asks for, never both (the URL " +
    "is requested, the price it asks is paid up to max_amount_usdc, and its reply comes back in `response`; " +
    "`protocol: \"mpp\"` says MPP was used); a 0x address receives amount_usd as USDC on Base; a bank details object receives amount_usd in USD " +
    "by ACH (2-3 business days). A platform fee of 1-2% is charged on top. `amount_charged` and `fee` are micro-USDC " +
    "(1 USDC = 1,000,000) for x402 and USDC, cents for bank payments. A transfer or bank payment is answered " +
    "`pending` (accepted, submitted right after) and completes later: list_transactions shows when. An x402 answer " +
    "is `processing` with the target's reply; the settlement the target reports is proven on-chain right after " +
    "(get_transaction then shows its `tx_hash`), and the payment completes, or fails and is credited back, on its own. When you do not know a URL's price, " +
    "call check_price first and pass its quote_id here: the payment is then made only at the quoted price. A payment " +
    "above the token's approval threshold answers `approval.status: \"required\"`: it waits for a person until " +
    "`approval.expires_at`; follow it with get_transaction.",
  access: "payment",
  inputSchema: PayRequest.extend({
    recipient: z
      .union([
        textRecipient.describe(
          "An https URL to pay with x402 or MPP (e.g. https://api.example.com/forecast) or a 0x-prefixed EVM address on Base " +
            "(0x followed by 40 hex characters).",
        ),
        inlined(BankRecipient).describe("A US bank account, paid in USD by ACH."),
      ])
      .describe(PayRequest.shape.recipient.description ?? ""),
    idempotency_key: IdempotencyKey.optional().describe(`${idempotencyKeyDescription} ${keyCharacters}`),
  }),
  outputSchema: PayResponse.extend({ response: inlined(ProxiedResponse).nullable() }),
  annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: true },
  handler: async (args, ctx, extra) => {
    const idempotency = chooseIdempotencyKey(ctx, "pay", args);
    const body: PayRequest = { ...args, idempotency_key: idempotency.key };
    const rail = railOf(args.recipient);
    const cap = ctx.config.maxPaymentMicros;
    if (rail === "x402" && body.max_amount_usdc === undefined && cap !== undefined) {
      body.max_amount_usdc = Math.min(cap, limits.x402MaxAmountMicrosMax);
    }
    // Without amount_usd the API refuses a transfer or bank payment, so such a call can spend nothing.
    const amountMicrosMax =
      rail === "x402" ? body.max_amount_usdc : args.amount_usd === undefined ? 0 : usdToMicrosCeil(args.amount_usd);
    return runPayment(ctx, extra, {
      tool: "pay",
      amountMicrosMax,
      summary: summarize(body, rail, amountMicrosMax),
      idempotency,
      send: () => ctx.client.pay(body),
    });
  },
});

type PayRail = "x402" | "usdc_transfer" | "fiat";

/** The rail the API will pick (it decides; a malformed recipient is its 400 to give). */
function railOf(recipient: PayRequest["recipient"]): PayRail {
  if (typeof recipient !== "string") return "fiat";
  return /^0x/i.test(recipient) ? "usdc_transfer" : "x402";
}

function summarize(body: PayRequest, rail: PayRail, amountMicrosMax: number | undefined): string {
  const amount = amountMicrosMax === undefined ? "?" : formatUsd(amountMicrosMax);
  if (typeof body.recipient !== "string") {
    return `${amount} by ACH to ${body.recipient.name} (account ending ${body.recipient.account_number.slice(-4)})`;
  }
  if (rail === "usdc_transfer") return `${amount} in USDC to ${body.recipient} on Base`;
  return amountMicrosMax === undefined
    ? `an x402 payment to ${body.recipient} of whatever price it asks (no max_amount_usdc given)`
    : `an x402 payment to ${body.recipient} of up to ${amount} in USDC`;
}
