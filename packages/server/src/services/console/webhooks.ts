/**
 * A project's webhook endpoints in the console: listed, read with their newest deliveries, created, deleted,
 * enabled again, and an event sent again, each by the CLI's and the admin API's own functions
 * (services/webhooks/endpoints.ts) once `authorizeChange` lets the viewer. An endpoint or event of another
 * project is answered as an unknown one.
 */
import type { Viewer, WebhookDelivery } from "@agentwallet/console";
import { badRequest } from "../../domain/errors.ts";
import { WEBHOOK_EVENT_TYPES } from "../../ledger/webhookOutbox.ts";
import type { ServiceDeps } from "../serviceDeps.ts";
import {
  createWebhookEndpoint,
  deleteWebhookEndpoint,
  enableWebhookEndpoint,
  endpointJson,
  listWebhookDeliveries,
  listWebhookEndpoints,
  redeliverWebhookEvent,
} from "../webhooks/endpoints.ts";
import { type ConsoleDeps, authorizeChange } from "./viewers.ts";

/** The event types an endpoint may ask for. */
export const webhookEventTypes: readonly string[] = WEBHOOK_EVENT_TYPES;

/** Deliveries a page shows at most. */
const DELIVERIES_SHOWN_MAX = 50;

async function endpointOf(deps: Pick<ConsoleDeps, "ledger">, projectId: string, endpointId: string) {
  const e = await deps.ledger.webhooks.getEndpoint(endpointId);
  return e && e.project_id === projectId ? e : undefined;
}

export async function listWebhooks(deps: Pick<ConsoleDeps, "ledger">, projectId: string) {
  return (await listWebhookEndpoints(deps.ledger, projectId)).map(endpointJson);
}

/** An endpoint of the project (deleted ones are gone) with its newest deliveries; null when there is none. */
export async function getWebhook(deps: Pick<ConsoleDeps, "ledger">, projectId: string, endpointId: string) {
  const e = await endpointOf(deps, projectId, endpointId);
  if (!e) return null;
  const deliveries = await listWebhookDeliveries(deps.ledger, endpointId, DELIVERIES_SHOWN_MAX);
  return { endpoint: endpointJson(e), deliveries: deliveries.map((d) => ({ ...d, endpoint_id: e.id, url: e.url }) as WebhookDelivery) };
}

/** The deliveries of the events about one transaction (its payment's or deposit's), newest first. */
export async function transactionDeliveries(deps: Pick<ConsoleDeps, "ledger">, projectId: string, transactionId: string): Promise<WebhookDelivery[]> {
  return (await deps.ledger.webhooks.listDeliveriesOf(projectId, transactionId, DELIVERIES_SHOWN_MAX)) as WebhookDelivery[];
}

/**
 * A new endpoint and, this once, its signing secret, sealed under `secretKey`; without that key (a server
 * started without it) the console creates none and says where to.
 */
export async function createWebhook(
  deps: ConsoleDeps & Pick<ServiceDeps, "newId" | "config">,
  secretKey: (() => Uint8Array) | undefined,
  viewer: Viewer,
  projectId: string,
  input: { url: string; events: string[] },
) {
  const actor = await authorizeChange(deps, viewer, projectId);
  if (!secretKey) throw badRequest("webhook_url_invalid", "This server was started without the key webhook secrets are sealed with; create endpoints with `agentwallet webhooks create`.");
  const { endpoint, secret } = await createWebhookEndpoint({ ledger: deps.ledger, clock: deps.clock, newId: deps.newId, mode: deps.config.mode, privateTargets: deps.config.privateTargets, secretKey }, { projectId, url: input.url, events: input.events }, actor);
  return { endpoint: endpointJson(endpoint), secret };
}

/** False if the project has no such endpoint. */
export async function deleteWebhook(deps: ConsoleDeps, viewer: Viewer, projectId: string, endpointId: string): Promise<boolean> {
  const actor = await authorizeChange(deps, viewer, projectId);
  if (!(await endpointOf(deps, projectId, endpointId))) return false;
  await deleteWebhookEndpoint(deps, endpointId, actor);
  return true;
}

/** False if the project has no such endpoint. */
export async function enableWebhook(deps: ConsoleDeps, viewer: Viewer, projectId: string, endpointId: string): Promise<boolean> {
  const actor = await authorizeChange(deps, viewer, projectId);
  if (!(await endpointOf(deps, projectId, endpointId))) return false;
  await enableWebhookEndpoint(deps, endpointId, actor);
  return true;
}

/** How many deliveries were scheduled; null if the project has no such event. */
export async function redeliverWebhook(deps: ConsoleDeps, viewer: Viewer, projectId: string, eventId: string): Promise<number | null> {
  await authorizeChange(deps, viewer, projectId);
  const event = await deps.ledger.webhooks.getEvent(eventId);
  if (!event || event.project_id !== projectId) return null;
  return redeliverWebhookEvent(deps, eventId);
}
