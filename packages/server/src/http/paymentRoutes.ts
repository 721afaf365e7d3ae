/**
 * Payment endpoints: `POST /v1/pay` and the three deprecated ones, all through the same core.
 * Success is 201 for a new USDC or fiat payment, 200 for x402 and for an idempotent replay (with
 * `Idempotent-Replayed: true`).
 */
import { DiscoveryQuery, IdempotencyKey, LegacyPaymentRequest, PayRequest, type PayResponse, QuoteRequest, UsdcTransferRequest, X402PayRequest, limits } from "@agentwallet/api";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { HttpDeps } from "./httpDeps.ts";
import { principalOf, tokenAuth } from "./auth.ts";
import { requireActive, requirePermission } from "../domain/principal.ts";
import { badRequest, conflict } from "../domain/errors.ts";
import type { Metrics } from "./metrics.ts";
import { parseOr400 } from "./validation.ts";
import { parseDecimalAmount } from "../money.ts";
import { carriesServiceToken } from "../tokenScan.ts";
import { type Created, createPayment } from "../services/payments/createPayment.ts";
import type { Payment } from "../domain/payment.ts";
import { checkAddress, checkUrl, classifyRecipient, fiatIntent, payIntent, usdcIntent, x402Request } from "../services/payments/parsePay.ts";
import { renderLegacyPayment, renderPay, renderUsdcTransfer, renderX402, renderX402FreeReply } from "../services/payments/render.ts";
import { quotePrice } from "../services/payments/quotePrice.ts";
import { discoverResources } from "../services/discoverResources.ts";

/**
 * The core's answer on the wire: 201 for a new USDC or bank payment, 200 for x402 (a payment or the
 * target's free reply) and for a repeat of a key, with `Idempotent-Replayed: true`.
 */
function answer<T>(reply: FastifyReply, metrics: Metrics, created: Created, render: (p: Payment) => T, renderReply?: (body: PayResponse) => unknown, shows?: Payment["rail"]) {
  if (created.replayed && created.kind === "payment" && shows !== undefined && created.payment.rail !== shows) throw keyReused(created.payment, shows);
  if (created.replayed) reply.header("idempotent-replayed", "true");
  if (created.kind === "reply") return reply.code(200).send(renderReply ? renderReply(created.body) : created.body);
  const x402 = created.payment.rail === "x402";
  if (!created.replayed && !x402) metrics.payments.labels(created.payment.rail, "accepted").inc();
  return reply.code(created.replayed || x402 ? 200 : 201).send(render(created.payment));
}

const RAIL_NAME: Record<Payment["rail"], string> = { x402: "an x402 payment", usdc_transfer: "a USDC transfer", fiat: "a bank payment" };

/**
 * A deprecated endpoint states only its own rail's payments, in its own units (cents, USDC, micro-USDC):
 * a key that names another rail's payment was used for a different request, and is refused rather
 * than answered with an amount that endpoint would misstate (decisions.md, "A key on another endpoint").
 */
function keyReused(p: Payment, shows: Payment["rail"]) {
  return conflict(
    "idempotency_key_reused",
    `The idempotency_key "${p.idempotencyKey}" belongs to ${RAIL_NAME[p.rail]} (${p.id}), which this endpoint, made for ${RAIL_NAME[shows].replace(/^an? /, "")}s, cannot show. Use a new key for a new payment, or read that one with GET /v1/transactions/${p.id} or by repeating it on POST /v1/pay.`,
  );
}

/**
 * The `Idempotency-Key` header, an alternative to the body's `idempotency_key` under the same rules:
 * the key of the request (or undefined), refused when malformed or when both are given and differ.
 */
export function headerIdempotencyKey(req: FastifyRequest, bodyKey: unknown): string | undefined {
  const raw = req.headers["idempotency-key"];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) throw badRequest("invalid_request", "The Idempotency-Key header may be given once.");
  if (carriesServiceToken(raw)) throw badRequest("token_in_request", "The Idempotency-Key header carries an Agent Wallet API token; a key is stored, a token never is. Use another key, and revoke the token if it was shared.");
  const parsed = IdempotencyKey.safeParse(raw);
  if (!parsed.success) {
    throw badRequest("invalid_request", `The Idempotency-Key header must be 1 to ${limits.idempotencyKeyMaxChars} characters of letters, digits, '_', '-', ':' and '.'.`);
  }
  if (bodyKey !== undefined && bodyKey !== parsed.data) {
    throw badRequest("invalid_request", "The Idempotency-Key header and the body's idempotency_key differ; send the key once, in either place.");
  }
  return parsed.data;
}

/** The body with the header's key as its `idempotency_key`, for the endpoints whose body has that field. */
function withHeaderKey(req: FastifyRequest): unknown {
  const body = req.body;
  if (body === null || typeof body !== "object" || Array.isArray(body)) return body;
  const key = headerIdempotencyKey(req, (body as { idempotency_key?: unknown }).idempotency_key);
  return key === undefined ? body : { ...body, idempotency_key: key };
}

/** RFC 9745 `Deprecation` (the date the endpoints were deprecated) and RFC 8288 `Link` to their successor. */
const DEPRECATED_SINCE = "@1735689600"; // 2025-01-01T00:00:00Z
function markDeprecated(reply: FastifyReply, ctx: HttpDeps): void {
  const base = (ctx.config.publicBaseUrl ?? "").replace(/\/+$/, "");
  reply.header("deprecation", DEPRECATED_SINCE);
  reply.header("link", `<${base}/v1/pay>; rel="successor-version"`);
}

export function registerPaymentRoutes(app: FastifyInstance, ctx: HttpDeps, metrics: Metrics): void {
  const payer = tokenAuth(ctx, "pay");
  // The deprecated endpoints say so even to a request refused by authentication.
  const deprecated = async (_req: FastifyRequest, reply: FastifyReply) => markDeprecated(reply, ctx);

  app.post("/v1/pay", { preHandler: payer }, async (req, reply) => {
    const p = principalOf(req);
    const body = parseOr400(PayRequest, withHeaderKey(req));
    const kind = classifyRecipient(body.recipient);
    if (kind.rail === "x402") requirePermission(p, "pay", "x402");
    // The core answers a replay, then refuses a paused project.
    return answer(reply, metrics, await createPayment(ctx, p, kind.rail === "x402" ? x402Request(body, kind.url) : payIntent(body, kind, p)), renderPay);
  });

  // The price of a URL, without paying (permission x402): the x402 half of a /v1/pay request.
  app.post("/v1/quote", { preHandler: tokenAuth(ctx, "x402") }, async (req) => {
    const p = principalOf(req);
    const body = parseOr400(QuoteRequest, req.body);
    const call = x402Request({ ...body, description: undefined, idempotency_key: undefined }, checkUrl(body.recipient, "recipient"));
    return quotePrice(ctx, p, call);
  });

  app.get("/v1/x402/resources", { preHandler: tokenAuth(ctx, "x402") }, async (req) => {
    const q = parseOr400(DiscoveryQuery, req.query, "query");
    return discoverResources(ctx, q);
  });

  app.post("/v1/payments", { preHandler: [deprecated, payer] }, async (req, reply) => {
    const p = principalOf(req);
    const body = parseOr400(LegacyPaymentRequest, withHeaderKey(req));
    const intent = fiatIntent({ bank: body.recipient, amountCents: body.amount, principal: p, description: body.description ?? null, idempotencyKey: body.idempotency_key ?? null, metadata: body.metadata ?? null });
    return answer(reply, metrics, await createPayment(ctx, p, intent), renderLegacyPayment, undefined, "fiat");
  });

  app.post("/v1/usdc/transfer", { preHandler: [deprecated, payer] }, async (req, reply) => {
    const p = principalOf(req);
    const body = parseOr400(UsdcTransferRequest, withHeaderKey(req));
    if (body.chain !== undefined && body.chain !== "base") throw badRequest("unsupported_chain", `chain "${body.chain.slice(0, 40)}" is not supported; the only chain is "base".`);
    const address = checkAddress(body.to_address, "to_address");
    const parsed = parseDecimalAmount(body.amount_usdc, 6);
    if (!parsed.ok) throw badRequest("invalid_amount", `amount_usdc ${parsed.reason} (USDC has 6 decimals).`);
    if (body.amount_usdc > limits.usdcTransferMaxUsd) throw badRequest("invalid_amount", `amount_usdc must be at most ${limits.usdcTransferMaxUsd}.`);
    const intent = usdcIntent({ address, amountMicros: parsed.units, principal: p, description: body.description ?? null, idempotencyKey: body.idempotency_key ?? null, metadata: body.metadata ?? null });
    return answer(reply, metrics, await createPayment(ctx, p, intent), renderUsdcTransfer, undefined, "usdc_transfer");
  });

  app.post("/v1/x402/pay", { preHandler: [deprecated, tokenAuth(ctx, "x402")] }, async (req, reply) => {
    const p = principalOf(req);
    requireActive(p);
    const body = parseOr400(X402PayRequest, req.body);
    // This body has no idempotency_key and no description; the header alone can give a key. Its answer says whether
    // the merchant's settlement is proven (`settled`), so it waits for the proof.
    const request = { ...x402Request({ ...body, idempotency_key: headerIdempotencyKey(req, undefined), description: undefined }, checkUrl(body.url, "url")), proofInAnswer: true };
    return answer(reply, metrics, await createPayment(ctx, p, request), renderX402, renderX402FreeReply, "x402");
  });
}
