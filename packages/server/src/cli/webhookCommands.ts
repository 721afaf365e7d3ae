/**
 * CLI commands of webhooks to clients: `webhooks create|list|delete|enable|deliveries|redeliver`. Each
 * is a service of services/webhooks/endpoints.ts; a service's refusal is one `error: …` line.
 */
import type { Config } from "../config.ts";
import { loadWebhookSecretKey } from "../masterKeys.ts";
import { openLedger } from "../ledger/open.ts";
import { DomainError } from "../domain/errors.ts";
import { newId, systemClock } from "../ids.ts";
import type { Ledger } from "../ledger/store.ts";
import { createWebhookEndpoint, deleteWebhookEndpoint, enableWebhookEndpoint, endpointJson, listWebhookDeliveries, listWebhookEndpoints, redeliverWebhookEvent } from "../services/webhooks/endpoints.ts";
import { type Command, CliError, cliActor, need, needArg } from "./command.ts";

/** The options of these commands (`--project` and `--limit` are shared with others). */
export const WEBHOOK_OPTIONS = {
  url: { type: "string" },
  events: { type: "string" },
} as const;

async function withLedger<T>(config: Config, fn: (l: Ledger) => Promise<T>): Promise<T> {
  const { ledger, opened } = await openLedger(config);
  try {
    return await fn(ledger);
  } catch (err) {
    if (err instanceof DomainError) throw new CliError(err.detail);
    throw err;
  } finally {
    await opened.close();
  }
}

export const webhookCommands: Record<string, Command> = {
  "webhooks create": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const url = need(options, "url");
    const events = typeof options.events === "string" ? options.events.split(",").map((e) => e.trim()).filter(Boolean) : undefined;
    const { endpoint, secret } = await withLedger(config, (ledger) =>
      createWebhookEndpoint({ ledger, clock: systemClock, newId, mode: config.mode, privateTargets: config.privateTargets, secretKey: () => loadWebhookSecretKey(config) }, { projectId, url, events }, cliActor()),
    );
    const json = endpointJson(endpoint);
    io.out(
      `Webhook endpoint ${endpoint.id} for ${projectId}: ${endpoint.url} (${json.events ? json.events.join(",") : "every event"}).\n\nSigning secret (Standard Webhooks):\n\n  ${secret}\n\nIt is shown once; it is stored encrypted with a key derived from the master key.`,
      { ...json, secret },
    );
    return 0;
  },

  "webhooks list": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const rows = (await withLedger(config, (l) => listWebhookEndpoints(l, projectId))).map(endpointJson);
    io.out(
      rows
        .map((e) => `${e.id}  ${e.state.padEnd(8)} ${e.url}  ${e.events ? e.events.join(",") : "every event"}${e.disabled_reason ? `\n    disabled ${e.disabled_at}: ${e.disabled_reason}` : e.failing_since ? `\n    failing since ${e.failing_since}` : ""}`)
        .join("\n") || "No webhook endpoints.",
      rows,
    );
    return 0;
  },

  "webhooks delete": async ({ config, args, io }) => {
    const id = needArg(args, "webhooks delete ENDPOINT_ID");
    io.out(`Deleted ${id}: nothing more is sent to it.`, await withLedger(config, (ledger) => deleteWebhookEndpoint({ ledger, clock: systemClock }, id, cliActor())));
    return 0;
  },

  "webhooks enable": async ({ config, args, io }) => {
    const id = needArg(args, "webhooks enable ENDPOINT_ID");
    const endpoint = await withLedger(config, (ledger) => enableWebhookEndpoint({ ledger, clock: systemClock }, id, cliActor()));
    io.out(`Enabled ${id}: what is pending is sent now.`, endpointJson(endpoint));
    return 0;
  },

  "webhooks deliveries": async ({ config, args, options, io }) => {
    const id = needArg(args, "webhooks deliveries ENDPOINT_ID [--limit N]");
    const limit = Math.min(1_000, Math.max(1, Number(options.limit ?? 50) || 50));
    const rows = await withLedger(config, (l) => listWebhookDeliveries(l, id, limit));
    io.out(
      rows
        .map((r) => `${r.event_id}  ${r.type.padEnd(26)} ${r.object_id}  ${r.state.padEnd(9)} ${r.attempts} attempt(s)${r.state === "pending" ? `, next ${r.next_attempt_at}` : ""}${r.last_error ? `  last: ${r.last_error}` : ""}`)
        .join("\n") || "No deliveries.",
      rows,
    );
    return 0;
  },

  "webhooks redeliver": async ({ config, args, io }) => {
    const id = needArg(args, "webhooks redeliver EVENT_ID");
    const scheduled = await withLedger(config, (ledger) => redeliverWebhookEvent({ ledger, clock: systemClock }, id));
    io.out(`Event ${id}: ${scheduled} deliver${scheduled === 1 ? "y" : "ies"} scheduled now (the running server sends ${scheduled === 1 ? "it" : "them"}).`, { event_id: id, scheduled });
    return 0;
  },
};
