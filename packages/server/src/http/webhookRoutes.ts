/**
 * Inbound provider webhooks, verified with the Standard Webhooks scheme (HMAC-SHA256 over
 * `id.timestamp.body`, 5-minute tolerance) on the raw body and de-duplicated by webhook id. They are
 * hints: each makes the service check the truth at its source (the chain, the fiat provider); a
 * webhook body never moves money on its own word.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { Webhook } from "standardwebhooks";
import { z } from "zod";
import type { HttpDeps } from "./httpDeps.ts";
import { verifyBridgeWebhook } from "../rails/fiat/verifyBridgeWebhook.ts";
import { type DomainError, badRequest, conflict, unauthorized, unavailable } from "../domain/errors.ts";

const DepositHint = z.object({
  type: z.string().max(100),
  data: z.object({ chain: z.literal("base").optional(), tx_hash: z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hash") }),
});
const FiatHint = z.object({
  type: z.string().max(100),
  data: z.object({ payout_id: z.string().min(1).max(200) }),
});

function verify(secret: string | undefined, req: FastifyRequest, what: string): unknown {
  if (!secret) throw unavailable("webhook_not_configured", `The ${what} webhook is not configured on this deployment.`);
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

/** One webhook route: verify, parse, de-duplicate by id, then hand the hint to its hook (202). */
function hintRoute<T>(
  scope: FastifyInstance,
  ctx: HttpDeps,
  r: {
    path: string;
    secret: () => string | undefined;
    what: string;
    schema: z.ZodType<{ data: T }>;
    shape: string;
    source: "deposits" | "fiat";
    /** Read per request: the server sets its hooks after the routes exist. */
    hook: () => ((data: T) => Promise<void>) | undefined;
    unavailable: DomainError;
  },
): void {
  scope.post(r.path, async (req, reply) => {
    const parsed = r.schema.safeParse(verify(r.secret(), req, r.what));
    if (!parsed.success) throw badRequest("invalid_webhook", `Webhook body must be ${r.shape}: ${parsed.error.issues[0]?.message}.`);
    if (!(await ctx.ledger.receivedWebhooks.remember(String(req.headers["webhook-id"]), r.source))) {
      throw conflict("webhook_replayed", "This webhook id was already processed.");
    }
    const hook = r.hook();
    if (!hook) throw r.unavailable;
    await hook(parsed.data.data);
    return reply.code(202).send({ received: true });
  });
}

const BridgeEvent = z.object({
  event_id: z.string().min(1).max(200),
  event_category: z.string().max(100),
  event_object_id: z.string().min(1).max(200).optional(),
});

/**
 * Bridge's webhooks (`POST /v1/webhooks/bridge`): RSA signature with the endpoint's public key over the
 * raw body, 10-minute tolerance (verifyBridgeWebhook.ts), de-duplicated by `event_id`. A transfer event
 * only makes the fiat rail read that transfer from Bridge.
 */
function bridgeRoute(scope: FastifyInstance, ctx: HttpDeps): void {
  scope.post("/v1/webhooks/bridge", async (req, reply) => {
    const key = ctx.config.fiat.bridge?.webhookPublicKey;
    if (!key) throw unavailable("webhook_not_configured", "The Bridge webhook is not configured on this deployment (BRIDGE_WEBHOOK_PUBLIC_KEY).");
    const header = req.headers["x-webhook-signature"];
    const check = verifyBridgeWebhook({ publicKeyPem: key, header: typeof header === "string" ? header : undefined, rawBody: req.body as string, nowMs: ctx.clock().getTime() });
    if (!check.ok) {
      // Bridge signs every retry afresh: a stale delivery is answered 400, as Bridge asks, so it retries.
      if (check.reason === "stale") throw badRequest("webhook_stale", "Webhook timestamp is outside the 10-minute tolerance.");
      throw unauthorized(check.reason === "forged" ? "Webhook signature does not verify." : "Missing or malformed X-Webhook-Signature header.");
    }
    let body: unknown;
    try {
      body = JSON.parse(req.body as string);
    } catch {
      throw badRequest("invalid_webhook", "Webhook body is not JSON.");
    }
    const parsed = BridgeEvent.safeParse(body);
    if (!parsed.success) throw badRequest("invalid_webhook", `Webhook body must be a Bridge event: ${parsed.error.issues[0]?.message}.`);
    if (!(await ctx.ledger.receivedWebhooks.remember(`bridge:${parsed.data.event_id}`, "fiat"))) throw conflict("webhook_replayed", "This webhook id was already processed.");
    if (parsed.data.event_category === "transfer" && parsed.data.event_object_id) {
      const hint = ctx.hooks.fiatHint;
      if (!hint) throw unavailable("fiat_unavailable", "The fiat rail is not configured on this deployment.");
      await hint(parsed.data.event_object_id);
    }
    return reply.code(202).send({ received: true });
  });
}

export function registerWebhookRoutes(app: FastifyInstance, ctx: HttpDeps): void {
  app.register(async (scope) => {
    // Signatures cover the exact bytes: keep the body as text for these routes.
    scope.removeContentTypeParser("application/json");
    scope.addContentTypeParser("application/json", { parseAs: "string", bodyLimit: 64 * 1024 }, (_req, body, done) => done(null, body));
    bridgeRoute(scope, ctx);
    hintRoute<z.infer<typeof DepositHint>["data"]>(scope, ctx, {
      path: "/v1/webhooks/deposits",
      secret: () => ctx.config.webhooks.depositSecret,
      what: "deposit",
      schema: DepositHint,
      shape: "{type, data: {tx_hash}}",
      source: "deposits",
      hook: () => {
        const depositHint = ctx.hooks.depositHint;
        return depositHint && ((d) => depositHint(d.tx_hash));
      },
      unavailable: unavailable("chain_unavailable", "Deposits are not watched on this deployment."),
    });
    hintRoute<z.infer<typeof FiatHint>["data"]>(scope, ctx, {
      path: "/v1/webhooks/fiat",
      secret: () => ctx.config.webhooks.fiatSecret,
      what: "fiat provider",
      schema: FiatHint,
      shape: "{type, data: {payout_id}}",
      source: "fiat",
      hook: () => {
        const fiatHint = ctx.hooks.fiatHint;
        return fiatHint && ((d) => fiatHint(d.payout_id));
      },
      unavailable: unavailable("fiat_unavailable", "The fiat rail is not configured on this deployment."),
    });
  });
}
