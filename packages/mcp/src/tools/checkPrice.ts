/**
 * `check_price` → `POST /v1/quote`: what paying a URL would cost, asked of the URL itself, without paying.
 * It answers the price and fee, the payee, the merchant's signed offer when it sends one, whether this
 * token's spending controls would allow it, and a `quote_id` that `pay` takes to pay that price or nothing.
 */
import { z } from "zod";
import { QuoteRequest, QuoteResponse, QuoteWindow, ProxiedResponse } from "@agentwallet/api";
import { apiFailure } from "../errors.ts";
import { defineTool, inlined, toolSuccess } from "../tool.ts";

const Out = inlined(QuoteResponse).extend({
  response: inlined(ProxiedResponse).nullable(),
  controls: inlined(QuoteResponse.shape.controls.unwrap()).extend({ windows: z.array(inlined(QuoteWindow)) }).nullable(),
});

export const checkPrice = defineTool({
  name: "check_price",
  title: "Check the price of a paid URL",
  description:
    "Ask an HTTP API that charges by x402 or MPP what a request would cost, without paying: nothing is signed or " +
    "charged. Call it first whenever you do not already know the price of a URL you are about to pay. It answers the " +
    "price (`amount_usd`, and `amount_usdc` in micro-USDC), this service's `fee_usd` on top, who would be paid, the " +
    "merchant's signed offer if it sent one (`offer.verification`), whether this token's spending controls allow it " +
    "(`controls.verdict`: would_pay, needs_approval or refused, with the rule and what remains in each window), and a " +
    "`quote_id` valid until `expires_at` (5 minutes). Pass that quote_id to pay with the same recipient, method and " +
    "body: it pays exactly this price, or refuses with quote_changed if the API asks something else by then. " +
    "`payment_required: false` means the URL is free (its reply is in `response`).",
  access: "read",
  inputSchema: inlined(QuoteRequest),
  outputSchema: Out,
  annotations: { readOnlyHint: true, openWorldHint: true },
  handler: async (args, ctx) => {
    try {
      const { data } = await ctx.client.quote(args);
      const notes: string[] = [];
      if (data.payment_required && data.controls?.verdict === "refused") notes.push(`This token may not make this payment (${data.controls.code}): ${data.controls.detail}`);
      else if (data.payment_required && data.quote_id) notes.push(`To pay exactly this price, call pay with recipient ${data.recipient} and quote_id "${data.quote_id}" before ${data.expires_at}.`);
      if (data.balance_sufficient === false) notes.push("The wallet's available balance does not cover price + fee: get_usdc_deposit_address tells where to add USDC.");
      return toolSuccess(data, notes);
    } catch (error) {
      return apiFailure(error, ctx, { kind: "read" });
    }
  },
});
