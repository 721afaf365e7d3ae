/**
 * Webhook endpoints, managed by the operator (CLI `agentwallet webhooks …`): create one for a project
 * (its `whsec_` secret is answered once), list, delete, enable again, read its deliveries, and send an
 * event again. The URL is checked as the delivery fetcher will check it: https in live mode, and no
 * loopback or private address there; the sandbox also takes http and loopback (a local receiver).
 */
import { badRequest, notFound } from "../../domain/errors.ts";
import type { Clock, IdGenerator } from "../../ids.ts";
import { checkAddress, ipLiteralFromHostname } from "../../net/ipPolicy.ts";
import type { ProjectStore, WebhookStore } from "../../ledger/ports.ts";
import { WEBHOOK_EVENT_TYPES, type WebhookEndpointRow, eventsColumn, eventsOf } from "../../ledger/webhookOutbox.ts";
import { newWebhookSecret, sealSecret } from "./secrets.ts";
import type { Actor } from "../../domain/audit.ts";

/** The endpoints of a project that exists: the webhooks and the projects of the ledger. */
type WebhookLedger = { webhooks: WebhookStore; projects: ProjectStore };
export type WebhookDeps = { ledger: WebhookLedger; clock: Clock; newId: IdGenerator; mode: "sandbox" | "live"; secretKey: () => Uint8Array; privateTargets?: readonly string[] };

/** The common practical URL limit, as the fetcher's. */
const URL_LENGTH_MAX = 2048;
/** Endpoints per project: each event is written once per endpoint in the change's transaction. */
export const ENDPOINTS_PER_PROJECT_MAX = 10;

/** The one JSON shape of an endpoint (never its secret; `create` adds `secret`, shown that once). */
export function endpointJson(e: WebhookEndpointRow) {
  return {
    id: e.id,
    project_id: e.project_id,
    url: e.url,
    events: eventsOf(e.events),
    state: e.disabled_at ? "disabled" : "enabled",
    disabled_at: e.disabled_at,
    disabled_reason: e.disabled_reason,
    failing_since: e.failing_since,
    created_at: e.created_at,
  };
}

export async function createWebhookEndpoint(deps: WebhookDeps, input: { projectId: string; url: string; events?: string[] }, actor?: Actor) {
  const url = checkWebhookUrl(input.url, deps.mode, deps.privateTargets);
  const events = checkEvents(input.events);
  if (!(await deps.ledger.projects.get(input.projectId))) throw projectNotFound(input.projectId);
  const existing = await deps.ledger.webhooks.listEndpoints(input.projectId);
  if (existing.length >= ENDPOINTS_PER_PROJECT_MAX) throw badRequest("webhook_endpoints_limit", `A project has at most ${ENDPOINTS_PER_PROJECT_MAX} webhook endpoints; delete one first.`);
  const id = deps.newId("whe");
  const secret = newWebhookSecret();
  const row: WebhookEndpointRow = {
    id,
    project_id: input.projectId,
    url,
    events: eventsColumn(events),
    secret_box: sealSecret(deps.secretKey(), id, secret),
    created_at: deps.clock().toISOString(),
    disabled_at: null,
    disabled_reason: null,
    failing_since: null,
    deleted_at: null,
  };
  await deps.ledger.webhooks.insertEndpoint(row, actor);
  return { endpoint: row, secret };
}

/** The URL normalised, or a 400 `webhook_url_invalid` saying what to change. */
export function checkWebhookUrl(raw: string, mode: "sandbox" | "live", privateTargets: readonly string[] = []): string {
  const bad = (why: string) => badRequest("webhook_url_invalid", `Webhook URL ${JSON.stringify(raw.slice(0, 100))} ${why}.`);
  if (raw.length > URL_LENGTH_MAX) throw bad(`is longer than ${URL_LENGTH_MAX} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw bad("is not an absolute URL");
  }
  if (url.username || url.password) throw bad("carries user:password@; put credentials in the path or ask the receiver to check the signature instead");
  if (url.protocol !== "https:" && !(mode === "sandbox" && url.protocol === "http:")) throw bad(mode === "live" ? "must be https://" : "must be http:// or https://");
  if (mode === "live") {
    const host = url.hostname.toLowerCase();
    if (host === "localhost" || host.endsWith(".localhost")) throw bad("is local; live mode delivers only to public hosts (the sandbox takes a local receiver)");
    const ip = ipLiteralFromHostname(host);
    const verdict = ip ? checkAddress(ip) : undefined;
    const named = !!ip && privateTargets.includes(`${ip.includes(":") ? `[${ip}]` : ip}:${url.port || "443"}`);
    if (verdict && !verdict.public && !named) throw bad(`is a ${verdict.reason} address; live mode delivers only to public hosts and to the private ones PRIVATE_TARGETS names`);
  }
  url.hash = "";
  return url.toString();
}

function checkEvents(events: string[] | undefined): string[] | null {
  if (!events || events.length === 0) return null;
  const unknown = events.filter((e) => !(WEBHOOK_EVENT_TYPES as readonly string[]).includes(e));
  if (unknown.length) throw badRequest("webhook_events_invalid", `Unknown event type ${unknown.map((e) => JSON.stringify(e.slice(0, 60))).join(", ")}; the types are ${WEBHOOK_EVENT_TYPES.join(", ")}.`);
  return [...new Set(events)];
}

export async function getWebhookEndpoint(ledger: WebhookLedger, id: string): Promise<WebhookEndpointRow> {
  const e = await ledger.webhooks.getEndpoint(id);
  if (!e) throw notFound("webhook_endpoint_not_found", `No webhook endpoint ${id.slice(0, 80)}; list them with \`agentwallet webhooks list --project ID\`.`);
  return e;
}

/** Deletes an endpoint: nothing more is written or sent to it. */
export async function deleteWebhookEndpoint(deps: Pick<WebhookDeps, "ledger" | "clock">, id: string, actor?: Actor): Promise<{ id: string; deleted: true }> {
  if (!(await deps.ledger.webhooks.deleteEndpoint(id, deps.clock().toISOString(), actor))) await getWebhookEndpoint(deps.ledger, id);
  return { id, deleted: true };
}

/** Enables an endpoint again (after it was disabled for failing): what is pending is sent at once. */
export async function enableWebhookEndpoint(deps: Pick<WebhookDeps, "ledger" | "clock">, id: string, actor?: Actor): Promise<WebhookEndpointRow> {
  await deps.ledger.webhooks.enableEndpoint(id, deps.clock().toISOString(), actor);
  return getWebhookEndpoint(deps.ledger, id);
}

/** The project's endpoints; 404 for an unknown project. */
export async function listWebhookEndpoints(ledger: WebhookLedger, projectId: string): Promise<WebhookEndpointRow[]> {
  if (!(await ledger.projects.get(projectId))) throw projectNotFound(projectId);
  return ledger.webhooks.listEndpoints(projectId);
}

const projectNotFound = (id: string) => notFound("project_not_found", `No project ${id.slice(0, 80)}.`);

/** The newest deliveries of an endpoint (at most `limit`), newest first. */
export async function listWebhookDeliveries(ledger: WebhookLedger, endpointId: string, limit = 50) {
  await getWebhookEndpoint(ledger, endpointId);
  return ledger.webhooks.listDeliveries(endpointId, limit);
}

/** Sends an event again to every enabled endpoint it was written for; the number of deliveries scheduled. */
export async function redeliverWebhookEvent(deps: Pick<WebhookDeps, "ledger" | "clock">, eventId: string): Promise<number> {
  const event = await deps.ledger.webhooks.getEvent(eventId);
  if (!event) throw notFound("webhook_event_not_found", `No webhook event ${eventId.slice(0, 80)}; \`agentwallet webhooks deliveries ENDPOINT_ID\` lists them.`);
  return deps.ledger.webhooks.redeliver(eventId, deps.clock().toISOString());
}
