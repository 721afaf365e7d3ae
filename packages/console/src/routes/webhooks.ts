/** A project's webhook endpoints: the list and the form that adds one (its secret shown once), an endpoint with its deliveries, delete, enable, send an event again. */
import type { FastifyInstance } from "fastify";
import type { WebhookEndpoint } from "../backend.ts";
import { webhookCreatedPage, webhookPage, webhooksPage } from "../pages.ts";
import { ConsoleError, type Kit, one } from "./kit.ts";

export function registerWebhooks(c: FastifyInstance, k: Kit): void {
  const { backend, pageContext, send, requireSession, projectFor, correctable, managedPost, oneTimeView } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/webhooks", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const deleted = one((req.query as Record<string, unknown>).deleted) === "1";
    return send(reply, webhooksPage(pageContext(s, { project, current: "webhooks" }), await backend.listWebhooks(project.id), backend.webhookEventTypes, deleted ? { notice: "Endpoint deleted: nothing more is sent to it." } : {}));
  });

  c.post<{ Params: { pid: string } }>("/console/p/:pid/webhooks", async (req, reply) => {
    const m = await managedPost(req, reply, "webhooks");
    if (!m) return reply;
    const url = (m.body.url ?? "").trim();
    const events = backend.webhookEventTypes.filter((t) => m.body[`event_${t}`] !== undefined);
    try {
      const { endpoint, secret } = await backend.createWebhook(m.s.viewer, m.project.id, { url, events });
      // Post, redirect, get, as for tokens: the secret is shown once and a reload adds no endpoint.
      const view = await backend.keepOneTimeView(m.s, m.project.id, "webhook", { endpoint, secret });
      return reply.redirect(`/console/p/${m.project.id}/webhooks/created/${view}`, 303);
    } catch (err) {
      const message = correctable(err);
      if (message === null) throw err;
      return send(reply, webhooksPage(m.pc, await backend.listWebhooks(m.project.id), backend.webhookEventTypes, { url, events, error: message }), 400);
    }
  });

  c.get<{ Params: { pid: string; vid: string } }>("/console/p/:pid/webhooks/created/:vid", async (req, reply) => {
    const v = await oneTimeView(req, reply, "webhook");
    if (!v) return reply;
    const shown = v.shown as { endpoint: WebhookEndpoint; secret: string };
    return send(reply, webhookCreatedPage(v.pc, shown.endpoint, shown.secret));
  });

  c.get<{ Params: { pid: string; wid: string } }>("/console/p/:pid/webhooks/:wid", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const w = await backend.getWebhook(project.id, req.params.wid);
    if (!w) throw new ConsoleError(404, "No such webhook endpoint in this project.");
    const q = req.query as Record<string, unknown>;
    const notice = one(q.redelivered) ? `Sent again: ${one(q.redelivered)} delivery(ies) scheduled now.` : one(q.enabled) ? "Enabled: what is pending is sent now." : undefined;
    return send(reply, webhookPage(pageContext(s, { project, current: "webhooks" }), w.endpoint, w.deliveries, notice));
  });

  c.post<{ Params: { pid: string; wid: string; action: string } }>("/console/p/:pid/webhooks/:wid/:action", async (req, reply) => {
    const action = req.params.action;
    if (action !== "delete" && action !== "enable") throw new ConsoleError(404, "No such action.");
    const m = await managedPost(req, reply, "webhooks");
    if (!m) return reply;
    const done = action === "delete" ? await backend.deleteWebhook(m.s.viewer, m.project.id, req.params.wid) : await backend.enableWebhook(m.s.viewer, m.project.id, req.params.wid);
    if (!done) throw new ConsoleError(404, "No such webhook endpoint in this project.");
    return reply.redirect(action === "delete" ? `/console/p/${m.project.id}/webhooks?deleted=1` : `/console/p/${m.project.id}/webhooks/${encodeURIComponent(req.params.wid)}?enabled=1`, 303);
  });

  c.post<{ Params: { pid: string; eid: string } }>("/console/p/:pid/webhooks/events/:eid/redeliver", async (req, reply) => {
    const m = await managedPost(req, reply, "webhooks");
    if (!m) return reply;
    const n = await backend.redeliverWebhook(m.s.viewer, m.project.id, req.params.eid);
    if (n === null) throw new ConsoleError(404, "No such webhook event in this project.");
    // Back to the page the button was on: an endpoint's or a transaction's (ids only, never a URL).
    const back = /^(webhooks\/whe_|transactions\/txn_)[A-Za-z0-9_-]{1,80}$/.test(m.body.back ?? "") ? m.body.back! : "webhooks";
    return reply.redirect(`/console/p/${m.project.id}/${back}${back === "webhooks" ? "" : `?redelivered=${n}`}`, 303);
  });
}
