/**
 * Payment endpoints: `POST /v1/pay` and the three deprecated ones, all through the same core.
 * Success is 201 for a new USDC or fiat payment, 200 for x402 and for an idempotent replay (with
 * `Idempotent-Replayed: true`).
 */
import { LegacyPaymentRequest, PayRequest, UsdcTransferRequest, X402PayRequest, limits } from "@agentwallet/api";
import type { FastifyInstance, FastifyReply } from "fastify";
import type { AppContext } from "../context.ts";
import { guard } from "./app.ts";
import { requireActive, requirePermission } from "./auth.ts";
import { ApiError, badRequest } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import { parseOr400 } from "./validation.ts";
import { parseDecimalAmount } from "../money.ts";
import { type CreatedPayment, createPayment } from "../services/payments/createPayment.ts";
import { checkAddress, classifyRecipient, fiatIntent, payIntent, usdcIntent } from "../services/payments/parsePay.ts";
import { renderLegacyPayment, renderPay, renderUsdcTransfer } from "../services/payments/render.ts";

/** 201 for a new payment, 200 with `Idempotent-Replayed: true` for a repeat of its key. */
function answer<T>(reply: FastifyReply, metrics: Metrics, created: CreatedPayment, render: (p: CreatedPayment["payment"]) => T) {
  if (created.replayed) reply.header("idempotent-replayed", "true");
  else metrics.payments.labels(created.payment.rail, "accepted").inc();
  return reply.code(created.replayed ? 200 : 201).send(render(created.payment));
}

export function registerPaymentRoutes(app: FastifyInstance, ctx: AppContext, metrics: Metrics): void {
  const x402 = () => {
    const rail = ctx.rails?.x402;
    if (!rail) throw new ApiError(503, "rail_unavailable", "The x402 rail is not configured on this deployment.");
    return rail;
  };

  app.post("/v1/pay", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "pay");
    const body = parseOr400(PayRequest, req.body);
    const kind = classifyRecipient(body.recipient);
    if (kind.rail === "x402") {
      requirePermission(p, "pay", "x402");
      requireActive(p);
      const out = await x402().pay(p, { ...body, recipient: kind.url });
      if (out.replayed) reply.header("idempotent-replayed", "true");
      return reply.code(out.httpStatus).send(out.body);
    }
    requireActive(p);
    return answer(reply, metrics, await createPayment(ctx, p, payIntent(body, kind, p)), renderPay);
  });

  app.post("/v1/payments", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "pay");
    requireActive(p);
    const body = parseOr400(LegacyPaymentRequest, req.body);
    const intent = fiatIntent({ bank: body.recipient, amountCents: body.amount, principal: p, description: body.description ?? null, idempotencyKey: body.idempotency_key ?? null });
    return answer(reply, metrics, await createPayment(ctx, p, intent), renderLegacyPayment);
  });

  app.post("/v1/usdc/transfer", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "pay");
    requireActive(p);
    const body = parseOr400(UsdcTransferRequest, req.body);
    if (body.chain !== undefined && body.chain !== "base") throw badRequest("unsupported_chain", `chain "${body.chain.slice(0, 40)}" is not supported; the only chain is "base".`);
    const address = checkAddress(body.to_address, "to_address");
    const parsed = parseDecimalAmount(body.amount_usdc, 6);
    if (!parsed.ok) throw badRequest("invalid_amount", `amount_usdc ${parsed.reason} (USDC has 6 decimals).`);
    if (body.amount_usdc > limits.usdcTransferMaxUsd) throw badRequest("invalid_amount", `amount_usdc must be at most ${limits.usdcTransferMaxUsd}.`);
    const intent = usdcIntent({ address, amountMicros: parsed.units, principal: p, description: body.description ?? null, idempotencyKey: body.idempotency_key ?? null });
    return answer(reply, metrics, await createPayment(ctx, p, intent), renderUsdcTransfer);
  });

  app.post("/v1/x402/pay", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "x402");
    requireActive(p);
    const body = parseOr400(X402PayRequest, req.body);
    const out = await x402().payLegacy(p, body);
    return reply.code(out.httpStatus).send(out.body);
  });
}
