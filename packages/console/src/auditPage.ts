/** The audit log's page: who changed what, from which address, before → after, newest first, paged by `seq`. */
import type { AuditItem } from "./backend.ts";
import { formatTime } from "./format.ts";
import { type Html, html } from "./html.ts";
import { type PageContext, layout } from "./pages.ts";

const ACTION_LABEL: Record<string, string> = {
  "project.paused": "Paused the project",
  "project.resumed": "Resumed the project",
  "project.controls_changed": "Changed the project's controls",
  "token.created": "Created a token",
  "token.controls_changed": "Changed a token's controls",
  "token.revoked": "Revoked a token",
  "webhook.created": "Added a webhook endpoint",
  "webhook.deleted": "Deleted a webhook endpoint",
  "webhook.enabled": "Enabled a webhook endpoint",
  "approval.decided": "Decided a payment",
  "credential.created": "Created an admin credential",
  "credential.revoked": "Revoked an admin credential",
};

/** A state as a short line: its fields as `key: value`, values as JSON (null: nothing, as for a creation's before). */
function stateText(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v !== "object" || Array.isArray(v)) return JSON.stringify(v);
  return Object.entries(v as Record<string, unknown>).map(([k, x]) => `${k}: ${JSON.stringify(x)}`).join("; ");
}

/** `projectId` null: the operator's page of every entry (credentials included). */
export function auditPage(pc: PageContext, page: { entries: AuditItem[]; nextBefore: number | null }, base: string): Html {
  const title = pc.project ? `${pc.project.name} — audit log` : "Audit log";
  return layout(
    pc,
    title,
    html`<h1>Audit log</h1>
<p class="muted">Every change an operator, a managing token or a token handing out child tokens made${pc.project ? " to this project" : ""}: token created, controls changed, revoked, project paused, webhook endpoints changed, approvals decided${pc.project ? "" : ", admin credentials created or revoked"}. An entry is written with its change, in the same database transaction, and can never be edited.</p>
${page.entries.length
  ? html`<div class="table-wrap"><table class="cards-narrow">
<caption class="visually-hidden">Audit entries, newest first</caption>
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Before</th><th scope="col">After</th></tr></thead>
<tbody>${page.entries.map(
      (e) => html`<tr><td data-label="When"><time datetime="${e.at}" title="${formatTime(e.at)}">${formatTime(e.at)}</time></td>
<td data-label="Who">${e.actor.name} <span class="muted address">${e.actor.id}</span>${e.actor.role ? html` <span class="muted">(${e.actor.role})</span>` : ""}${e.actor.ip ? html`<br><span class="muted">from ${e.actor.ip}</span>` : ""}</td>
<td data-label="What">${ACTION_LABEL[e.action] ?? e.action} <span class="address">${e.target_id}</span>${!pc.project && e.project_id ? html` <span class="muted">in <a href="/console/p/${e.project_id}">${e.project_id}</a></span>` : ""}</td>
<td data-label="Before" class="address">${stateText(e.before)}</td><td data-label="After" class="address">${stateText(e.after)}</td></tr>`,
    )}</tbody></table></div>`
  : html`<p>No entries yet.</p>`}
${page.nextBefore !== null ? html`<p><a href="${base}?before=${page.nextBefore}">Older entries</a></p>` : ""}`,
  );
}
