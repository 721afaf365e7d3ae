/**
 * A payment made with a `quote_id` (quotePrice.ts): before the target is contacted, the quote must be this
 * project's and token's, unexpired, and for this very request (URL, method, body hash); after the target
 * answered 402, the requirement a payment would choose must be the quoted one (amount, payTo, network,
 * asset), or the payment is refused with 409 `quote_changed` naming both, before anything is signed or
 * held. Without a quote nothing here runs.
 */
import { limits } from "@agentwallet/api";
import { DomainError, badRequest, conflict, notFound } from "../../domain/errors.ts";
import { X402_REFUSAL_CODES } from "../../domain/errorCodes.ts";
import type { Principal } from "../../domain/principal.ts";
import type { QuoteRow } from "../../ledger/quotes.ts";
import type { TargetReply, X402Call, X402Quote, X402Rail, X402Terms } from "../../rails/rails.ts";
import { priceAboveMax } from "../../rails/x402/x402Errors.ts";
import { formatUsdc } from "../../money.ts";
import { type QuoteContext, bodyHash } from "./quotePrice.ts";

/** What of an x402 payment request (payByRequest.ts) a quote is held to. */
type QuotedRequest = Pick<X402Call, "url" | "method" | "body" | "maxAmountMicros"> & { quoteId: string | null };

/** The quote a payment names, checked against the request; undefined when it names none. */
export async function quoteOf(ctx: QuoteContext, principal: Principal, req: QuotedRequest): Promise<QuoteRow | undefined> {
  if (req.quoteId === null) return undefined;
  const q = await ctx.ledger.quotes.get(principal.projectId, req.quoteId);
  if (!q) throw notFound("quote_not_found", `No quote ${req.quoteId.slice(0, 64)} in this project (quotes are kept until they expire). Ask for a new one with POST /v1/quote.`);
  if (q.token_id !== principal.tokenId) throw badRequest("quote_mismatch", `Quote ${q.id} was made with another token of this project; its controls' verdict is that token's. Ask for a quote with this token.`);
  if (q.expires_at <= ctx.clock().toISOString()) throw conflict("quote_expired", `Quote ${q.id} expired at ${q.expires_at}. Ask for a new one with POST /v1/quote; nothing was requested, signed or charged.`);
  const differs = [q.url !== req.url ? "recipient" : "", q.method !== req.method ? "method" : "", q.body_hash !== bodyHash(req.body) ? "body" : ""].filter(Boolean);
  if (differs.length) throw badRequest("quote_mismatch", `Quote ${q.id} was made for another request (its ${differs.join(", ")} differ${differs.length === 1 ? "s" : ""}). Pay with the quoted recipient, method and body, or ask for a quote of this request.`);
  return q;
}

/**
 * The target's requirement judged as a payment would, held to the quote: a target that now asks other
 * terms, or none this service can pay, is `quote_changed`; the caller's max_amount_usdc still caps it.
 */
export async function judgeAgainstQuote(rail: X402Rail, reply: TargetReply, walletIndex: number, req: QuotedRequest, q: QuoteRow): Promise<X402Quote> {
  let judged: X402Quote;
  try {
    // The quote is the cap here: a raised price is the quote's change, not the caller's cap.
    judged = await rail.judge(reply, walletIndex, limits.x402MaxAmountMicrosMax);
  } catch (err) {
    if (err instanceof DomainError && (X402_REFUSAL_CODES as readonly string[]).includes(err.code)) throw changed(q, null, err.detail);
    throw err;
  }
  const t = judged.terms;
  const same = t.amountMicros === q.amount_micros && t.payTo.toLowerCase() === q.pay_to.toLowerCase() && t.network === q.network && t.asset.toLowerCase() === q.asset.toLowerCase() && t.protocol === q.protocol;
  if (!same) throw changed(q, t, null);
  if (t.amountMicros > req.maxAmountMicros) throw priceAboveMax(t.amountMicros, req.maxAmountMicros);
  return judged;
}

function changed(q: QuoteRow, now: X402Terms | null, refusal: string | null): DomainError {
  const quoted = { amount_usdc: q.amount_micros, pay_to: q.pay_to, network: q.network, asset: q.asset, protocol: q.protocol };
  const current = now ? { amount_usdc: now.amountMicros, pay_to: now.payTo, network: now.network, asset: now.asset, protocol: now.protocol } : null;
  const what = now
    ? [
        now.amountMicros !== q.amount_micros ? `the price is ${formatUsdc(now.amountMicros)} USDC, quoted ${formatUsdc(q.amount_micros)} USDC` : "",
        now.payTo.toLowerCase() !== q.pay_to.toLowerCase() ? `payTo is ${now.payTo}, quoted ${q.pay_to}` : "",
        now.network !== q.network ? `the network is ${now.network}, quoted ${q.network}` : "",
        now.asset.toLowerCase() !== q.asset.toLowerCase() ? `the asset is ${now.asset}, quoted ${q.asset}` : "",
        now.protocol !== q.protocol ? `the protocol is ${now.protocol}, quoted ${q.protocol}` : "",
      ].filter(Boolean).join("; ")
    : `it no longer offers a requirement this service can pay (${refusal})`;
  return conflict("quote_changed", `The target's terms changed since quote ${q.id}: ${what}. Nothing was signed or charged. Ask for a new quote with POST /v1/quote and decide again.`, { quoted, current });
}
