/**
 * `POST /v1/quote`: what paying a URL would cost, asked of the target itself, with nothing signed and
 * nothing held. The same steps as a payment up to the price (payByRequest.ts): a host or rail the controls
 * refuse is refused before any connection, then the unpaid request through the x402 rail's SSRF-safe
 * fetcher, then the rail's judgement of the 402 (the requirement a payment would choose). Then, instead
 * of a hold: the fee, the merchant's signed offer and whether it holds, the controls' verdict (as the hold
 * would judge it now), and a quote stored under an id that binds the request (URL, method, body hash) to
 * the terms (amount, payTo, network, asset): `POST /v1/pay` with that id pays those terms or nothing.
 */
import { createHash } from "node:crypto";
import { type QuoteResponse, limits } from "@agentwallet/api";
import { type Principal, requireActive } from "../../domain/principal.ts";
import { judgeStatic, refusalError } from "../../domain/spending.ts";
import type { QuoteStore } from "../../ledger/ports.ts";
import type { X402Call } from "../../rails/rails.ts";
import { feeFor } from "../../money.ts";
import { holdControls, microsToUsd } from "../spendingControls.ts";
import { controlsVerdict } from "./controlsVerdict.ts";
import { railUnavailable } from "./hold.ts";
import type { PaymentContext } from "./paymentContext.ts";

export type QuoteContext = PaymentContext & { ledger: { quotes: QuoteStore } };

/** The hash a quote binds the request body by: SHA-256 of its UTF-8 text, of "" when there is none. */
export function bodyHash(body: string | undefined): string {
  return createHash("sha256").update(body ?? "", "utf8").digest("hex");
}

export async function quotePrice(ctx: QuoteContext, principal: Principal, call: X402Call): Promise<QuoteResponse> {
  requireActive(principal);
  const rail = ctx.rails?.x402;
  if (!rail) throw railUnavailable("x402");
  // A host or rail the controls refuse is never contacted, for a quote as for a payment.
  const controls = holdControls(ctx, principal, { rail: "x402", url: call.url });
  const early = controls && judgeStatic(controls, principal.projectId, "x402", 0, ctx.clock());
  if (early && early.kind === "refused") throw refusalError(early.refusal);

  const first = await rail.request(call);
  const base = { recipient: call.url, method: call.method };
  if (!first.paymentRequired) {
    return { ...base, quote_id: null, expires_at: null, payment_required: false, protocol: null, amount_usdc: null, amount_usd: null, fee_usdc: null, fee_usd: null, requirement: null, offer: null, controls: null, balance_sufficient: null, response: first.proxied() };
  }
  const { terms } = await rail.judge(first, principal.walletIndex, call.maxAmountMicros);
  const feeMicros = feeFor(terms.amountMicros, principal.plan);
  const [offer, verdict] = await Promise.all([terms.offer(), controlsVerdict(ctx, principal, { rail: "x402", url: call.url }, terms.amountMicros)]);

  const now = ctx.clock();
  const expiresAt = new Date(now.getTime() + limits.quoteValiditySeconds * 1000).toISOString();
  const id = ctx.newId("quo");
  await ctx.ledger.quotes.insert({
    id,
    project_id: principal.projectId,
    token_id: principal.tokenId,
    url: call.url,
    method: call.method,
    body_hash: bodyHash(call.body),
    protocol: terms.protocol,
    scheme: terms.scheme,
    network: terms.network,
    asset: terms.asset,
    pay_to: terms.payTo,
    amount_micros: terms.amountMicros,
    verdict: verdict.verdict,
    refusal_code: verdict.code,
    created_at: now.toISOString(),
    expires_at: expiresAt,
  });
  return {
    ...base,
    quote_id: id,
    expires_at: expiresAt,
    payment_required: true,
    protocol: terms.protocol,
    amount_usdc: terms.amountMicros,
    amount_usd: microsToUsd(terms.amountMicros),
    fee_usdc: feeMicros,
    fee_usd: microsToUsd(feeMicros),
    requirement: { scheme: terms.scheme, network: terms.network, asset: terms.asset, pay_to: terms.payTo, max_timeout_seconds: terms.maxTimeoutSeconds },
    offer,
    controls: verdict,
    balance_sufficient: principal.balance.availableMicros >= terms.amountMicros + feeMicros,
    response: null,
  };
}
