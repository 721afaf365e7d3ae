/**
 * The admin API's webhook endpoints, `/v1/admin/…/webhooks`: what `agentwallet webhooks …` does, over the
 * same service functions (services/webhooks/endpoints.ts). Authenticated by an admin credential only.
 */
import { AdminWebhookDeliveriesQuery, CreateWebhookEndpointRequest } from "@agentwallet/api";
import type { FastifyInstance } from "fastify";
import { adminActor, adminAuth } from "./auth.ts";
import { parseOr400 } from "./validation.ts";
import { unavailable } from "../domain/errors.ts";
import {
  type WebhookDeps,
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  enableWebhookEndpoint,
  endpointJson,
  listWebhookDeliveries,
  listWebhookEndpoints,
  redeliverWebhookEvent,
} from "../services/webhooks/endpoints.ts";

type WithId = { Params: { id: string } };
type AdminRoutesContext = Parameters<typeof adminAuth>[0];

export function registerAdminWebhookRoutes(app: FastifyInstance, ctx: AdminRoutesContext): void {
  const asAdmin = { preHandler: adminAuth(ctx) };
  const asViewer = { preHandler: adminAuth(ctx, "viewer") };
  const deps: WebhookDeps = {
    ledger: ctx.ledger,
    clock: ctx.clock,
    newId: ctx.newId,
    mode: ctx.config.mode,
    privateTargets: ctx.config.privateTargets,
    secretKey: () => {
      if (!ctx.webhookSecretKey) throw unavailable("webhook_key_unavailable", "This server has no key to encrypt webhook secrets with (no master key source); create the endpoint with `agentwallet webhooks create` where the master key is.");
      return ctx.webhookSecretKey;
    },
  };
  app.get<WithId>("/v1/admin/projects/:id/webhooks", asViewer, async (req, reply) => {
    return { data: (await listWebhookEndpoints(ctx.ledger, req.params.id)).map(endpointJson) };
  });
  app.post<WithId>("/v1/admin/projects/:id/webhooks", asAdmin, async (req, reply) => {
    const body = parseOr400(CreateWebhookEndpointRequest, req.body);
    const { endpoint, secret } = await createWebhookEndpoint(deps, { projectId: req.params.id, url: body.url, events: body.events }, adminActor(req));
    return reply.code(201).send({ ...endpointJson(endpoint), secret });
  });
  app.delete<WithId>("/v1/admin/webhooks/:id", asAdmin, async (req, reply) => {
    return deleteWebhookEndpoint(deps, req.params.id, adminActor(req));
  });
  app.post<WithId>("/v1/admin/webhooks/:id/enable", asAdmin, async (req, reply) => {
    return endpointJson(await enableWebhookEndpoint(deps, req.params.id, adminActor(req)));
  });
  app.get<WithId>("/v1/admin/webhooks/:id/deliveries", asViewer, async (req, reply) => {
    const q = parseOr400(AdminWebhookDeliveriesQuery, req.query ?? {}, "query");
    return { data: await listWebhookDeliveries(ctx.ledger, req.params.id, q.limit ?? 50) };
  });
  app.post<WithId>("/v1/admin/webhook-events/:id/redeliver", asAdmin, async (req, reply) => {
    return { event_id: req.params.id, scheduled: await redeliverWebhookEvent(deps, req.params.id) };
  });
}
