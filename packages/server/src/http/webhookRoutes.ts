/**
 * Inbound provider webhooks, verified with the Standard Webhooks scheme (HMAC-SHA256 over
 * `id.timestamp.body`, 5-minute tolerance) on the raw body and de-duplicated by webhook id. They are
 * hints: each makes the service check the truth at its source (the chain, the fiat provider); a
 * webhook body never moves money on its own word.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import type { AppContext } from "../context.ts";
import { ApiError, badRequest, conflict, unauthorized } from "./errors.ts";

const DepositHint = z.object({
  type: z.string().max(100),
  data: z.object({ chain: z.literal("base").optional(), tx_hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hash") }),
});
const FiatHint = z.object({
  type: z.string().max(100),
  data: z.object({ payout_id: z.string().min(1).max(200) }),
});

function verify(secret: string | undefined, req: FastifyRequest, what: string): unknown {
  if (!secret) throw new ApiError(503, "webhook_not_configured", `The ${what} webhook is not configured on this deployment.`);
  const h = req.headers;
  const headers = {
    "webhook-id": String(h["webhook-id"] ?? ""),
    "webhook-timestamp": String(h["webhook-timestamp"] ?? ""),
    "webhook-signature": String(h["webhook-signature"] ?? ""),
  };
  if (!headers["webhook-id"] || !headers["webhook-timestamp"] || !headers["webhook-signature"]) {
    throw unauthorized("Missing webhook-id, webhook-timestamp or webhook-signature header.");
  }
  if (headers["webhook-id"].length > 200) throw badRequest("invalid_webhook", "webhook-id is too long.");
  try {
    return new Webhook(secret).verify(req.body as string, headers);
  } catch (err) {
    const msg = (err as Error).message ?? "";
    throw unauthorized(/timestamp/i.test(msg) ? "Webhook timestamp is outside the 5-minute tolerance." : "Webhook signature does not verify.");
  }
}

export function registerWebhookRoutes(app: FastifyInstance, ctx: AppContext): void {
  app.register(async (scope) => {
    // Signatures cover the exact bytes: keep the body as text for these routes.
    scope.addContentTypeParser("application/json", { parseAs: "string", bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, body));

    scope.post("/v1/webhooks/deposits", async (req, reply) => {
      const payload = verify(ctx.config.webhooks.depositSecret, req, "deposit");
      const parsed = DepositHint.safeParse(payload);
      if (!parsed.success) throw badRequest("invalid_webhook", `Webhook body must be {type, data: {tx_hash}}: ${parsed.error.issues[0]?.message}.`);
      if (!(await ctx.ledger.rememberWebhook(String(req.headers["webhook-id"]), "deposits"))) {
        throw conflict("webhook_replayed", "This webhook id was already processed.");
      }
      if (!ctx.hooks.depositHint) throw new ApiError(503, "chain_unavailable", "Deposits are not watched on this deployment.");
      await ctx.hooks.depositHint(parsed.data.data.tx_hash);
      return reply.code(202).send({ received: true });
    });

    scope.post("/v1/webhooks/fiat", async (req, reply) => {
      const payload = verify(ctx.config.webhooks.fiatSecret, req, "fiat provider");
      const parsed = FiatHint.safeParse(payload);
      if (!parsed.success) throw badRequest("invalid_webhook", `Webhook body must be {type, data: {payout_id}}: ${parsed.error.issues[0]?.message}.`);
      if (!(await ctx.ledger.rememberWebhook(String(req.headers["webhook-id"]), "fiat"))) {
        throw conflict("webhook_replayed", "This webhook id was already processed.");
      }
      if (!ctx.hooks.fiatHint) throw new ApiError(503, "fiat_unavailable", "The fiat rail is not configured on this deployment.");
      await ctx.hooks.fiatHint(parsed.data.data.payout_id);
      return reply.code(202).send({ received: true });
    });
  });
}
