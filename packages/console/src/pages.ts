/** The console's pages as functions of data to HTML. No I/O here: routes (routes/) read, pages render. */
import { mcpClientConfig, type DepositAddress, type Transaction } from "@agentwallet/api";
import type { ApprovalItem, Controls, DailySpend, RefusalItem, WebhookDelivery, WebhookEndpoint, Interval, LimitWindow, NewToken, Overview, ProjectSummary, TokenSummary, Viewer } from "./backend.ts";
import { formatAmount, formatMicros, formatTime } from "./format.ts";
import { type Html, html, raw } from "./html.ts";
import { refusalSentence } from "./outcomes.ts";

export type PageContext = {
  viewer: Viewer | null;
  csrf: string;
  /** The project in view, for the navigation. */
  project?: ProjectSummary;
  current?: "overview" | "spend" | "transactions" | "approvals" | "agents" | "webhooks" | "projects" | "audit";
  sandbox: boolean;
  /** Base of a block explorer's transaction links (live mode), or null (sandbox: no links). */
  explorerTxUrl: string | null;
};

export const TYPES = ["usdc_fund", "payment", "x402_payment", "usdc_transfer", "platform_fee"] as const;
export const STATUSES = ["pending", "processing", "completed", "failed", "reversed"] as const;

export const TYPE_LABEL: Record<string, string> = {
  usdc_fund: "Deposit",
  payment: "Bank payment",
  x402_payment: "x402 payment",
  usdc_transfer: "USDC transfer",
  platform_fee: "Fee",
};

export function layout(pc: PageContext, title: string, body: Html): Html {
  const p = pc.project;
  const link = (href: string, label: string, key: PageContext["current"]) =>
    html`<li><a href="${href}"${pc.current === key ? raw(' aria-current="page"') : ""}>${label}</a></li>`;
  const nav = pc.viewer
    ? html`<nav aria-label="Main"><ul>
        ${pc.viewer.kind === "operator" ? link("/console/projects", "Projects", "projects") : ""}
        ${p ? [link(`/console/p/${p.id}`, "Overview", "overview"), link(`/console/p/${p.id}/spend`, "Spend", "spend"), link(`/console/p/${p.id}/transactions`, "Transactions", "transactions"), link(`/console/p/${p.id}/approvals`, "Approvals", "approvals"), link(`/console/p/${p.id}/agents`, "Agents", "agents"), link(`/console/p/${p.id}/webhooks`, "Webhooks", "webhooks"), canSeeAudit(pc) ? link(`/console/p/${p.id}/audit`, "Audit", "audit") : ""] : ""}
        ${!p && pc.viewer.kind === "operator" ? link("/console/audit", "Audit", "audit") : ""}
      </ul></nav>
      <form class="inline" method="post" action="/console/signout"><input type="hidden" name="csrf" value="${pc.csrf}"><button class="secondary" type="submit">Sign out</button></form>`
    : "";
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="csrf-token" content="${pc.csrf}">
<title>${title} · Agent Wallet</title>
<link rel="stylesheet" href="/console/assets/console.css">
<script src="/console/assets/console.js" defer></script>
</head>
<body>
<header class="top"><a class="brand" href="/console">Agent Wallet${pc.sandbox ? " (sandbox)" : ""}</a>${p ? html`<span class="muted">${p.name}</span>` : ""}${nav}</header>
<main id="main">
${body}
</main>
</body>
</html>`;
}

export function signInPage(pc: PageContext, error?: string, code?: string): Html {
  return layout(
    pc,
    "Sign in",
    html`<div class="signin">
<h1>Sign in</h1>
${error ? html`<p class="notice error" role="alert">${error}</p>` : ""}
${code
  ? html`<form method="post" action="/console/signin/code"><input type="hidden" name="code" value="${code}">
      <p>Continue to the sandbox's demo project with the one-time sign-in link.</p><button type="submit">Continue</button></form>`
  : ""}
<form method="post" action="/console/signin">
  <input type="hidden" name="kind" value="token">
  <div class="field"><label for="token">Project API token</label>
  <input id="token" name="secret" type="password" autocomplete="off" required spellcheck="false"></div>
  <p class="muted">You see that project only, with exactly that token's permissions.</p>
  <button type="submit">Sign in with token</button>
</form>
<h2>Operator</h2>
<form method="post" action="/console/signin">
  <input type="hidden" name="kind" value="operator">
  <div class="field"><label for="admin">Admin key</label>
  <input id="admin" name="secret" type="password" autocomplete="off" required spellcheck="false"></div>
  <button type="submit">Sign in as operator</button>
</form>
</div>`,
  );
}

export function projectsPage(pc: PageContext, projects: ProjectSummary[]): Html {
  return layout(
    pc,
    "Projects",
    html`<h1>Projects</h1>
<div class="table-wrap"><table>
<caption class="visually-hidden">Every project of this deployment</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Id</th><th scope="col">Plan</th><th scope="col">State</th><th scope="col" class="hide-narrow">Created</th></tr></thead>
<tbody>${projects.map((p) => html`<tr><td><a href="/console/p/${p.id}">${p.name}</a></td><td class="address">${p.id}</td><td>${p.plan}</td><td>${p.paused ? "paused" : "active"}</td><td class="hide-narrow">${formatTime(p.created_at)}</td></tr>`)}</tbody>
</table></div>
${projects.length === 0 ? html`<p>No projects yet. Create one with <code>agentwallet projects create --name NAME</code>.</p>` : ""}`,
  );
}

export function statusCell(status: string): Html {
  return html`<span class="status status-${status}">${status}</span>`;
}

export function transactionRows(projectId: string, rows: Transaction[]): Html {
  return html`${rows.map(
    (t) => html`<tr>
<td><a href="/console/p/${projectId}/transactions/${t.id}">${TYPE_LABEL[t.type] ?? t.type}</a></td>
<td class="num">${t.type === "usdc_fund" ? "+" : ""}${formatAmount(t.amount, t.currency)}</td>
<td>${statusCell(t.status)}</td>
<td class="hide-narrow">${t.merchant_name ?? t.description ?? ""}</td>
<td>${formatTime(t.created_at)}</td>
</tr>`,
  )}`;
}

function transactionTable(projectId: string, rows: Transaction[], caption: string): Html {
  return html`<div class="table-wrap"><table>
<caption class="visually-hidden">${caption}</caption>
<thead><tr><th scope="col">Type</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col" class="hide-narrow">Description</th><th scope="col">Created</th></tr></thead>
<tbody>${transactionRows(projectId, rows)}</tbody>
</table></div>`;
}

const RAIL_COLOR: Record<DailySpend["rail"], string> = { x402: "#1f4fd1", usdc_transfer: "#0f7a5a", fiat: "#b35c00" };
export const RAIL_LABEL: Record<DailySpend["rail"], string> = { x402: "x402", usdc_transfer: "USDC transfer", fiat: "Bank (ACH)" };

/** Stacked bars, one per UTC day, with a table of the same figures for screen readers. */
export function spendChart(spend: DailySpend[], days: string[]): Html {
  const byDay = new Map<string, Record<string, number>>();
  for (const d of days) byDay.set(d, {});
  for (const s of spend) {
    const row = byDay.get(s.day);
    if (row) row[s.rail] = (row[s.rail] ?? 0) + s.amount_micros;
  }
  const totals = days.map((d) => Object.values(byDay.get(d)!).reduce((a, b) => a + b, 0));
  const max = Math.max(1, ...totals);
  const w = 600;
  const h = 160;
  const bw = w / days.length;
  const bars: string[] = [];
  days.forEach((d, i) => {
    let y = h;
    for (const rail of ["x402", "usdc_transfer", "fiat"] as const) {
      const v = byDay.get(d)![rail] ?? 0;
      if (!v) continue;
      const bh = Math.max(1, (v / max) * (h - 10));
      y -= bh;
      bars.push(`<rect x="${(i * bw + 1).toFixed(1)}" y="${y.toFixed(1)}" width="${(bw - 2).toFixed(1)}" height="${bh.toFixed(1)}" fill="${RAIL_COLOR[rail]}"><title>${d} ${RAIL_LABEL[rail]}: $${formatMicros(v)}</title></rect>`);
    }
  });
  const total = totals.reduce((a, b) => a + b, 0);
  return html`<figure class="chart" aria-labelledby="spend-caption">
<figcaption id="spend-caption">Spend per day, last ${days.length} days (UTC), by rail: $${formatMicros(total)} in all</figcaption>
<svg viewBox="0 0 ${w} ${h}" role="img" aria-label="Spend per day by rail">${raw(bars.join(""))}<line x1="0" y1="${h - 0.5}" x2="${w}" y2="${h - 0.5}" stroke="#8a91a1"/></svg>
<div class="legend">${(["x402", "usdc_transfer", "fiat"] as const).map((r) => html`<span><span class="swatch" style="background:${RAIL_COLOR[r]}"></span>${RAIL_LABEL[r]}</span>`)}</div>
<details><summary>Figures</summary><table><thead><tr><th scope="col">Day</th>${(["x402", "usdc_transfer", "fiat"] as const).map((r) => html`<th scope="col" class="num">${RAIL_LABEL[r]}</th>`)}</tr></thead>
<tbody>${days.filter((_, i) => totals[i]! > 0).map((d) => html`<tr><td>${d}</td>${(["x402", "usdc_transfer", "fiat"] as const).map((r) => html`<td class="num">$${formatMicros(byDay.get(d)![r] ?? 0)}</td>`)}</tr>`)}</tbody></table></details>
</figure>`;
}

/** Sandbox: paying the demo x402 merchant through the API, ready to paste (the token stays in the shell). */
function x402Example(x: { paidUrl: string; priceMicros: number; baseUrl: string }): Html {
  const body = JSON.stringify({ recipient: x.paidUrl, max_amount_usdc: x.priceMicros });
  return html`<section aria-labelledby="x402-h"><h2 id="x402-h">Try x402</h2>
<p>The sandbox runs a demo x402 merchant: <span class="address">${x.paidUrl}</span> answers for $${formatMicros(x.priceMicros)} in test USDC. With a token that has the x402 permission in <code>AGENTWALLET_API_TOKEN</code>:</p>
<pre class="snippet address" id="x402-example" tabindex="0" aria-labelledby="x402-h">curl -s ${x.baseUrl}/v1/pay -H "Authorization: Bearer $AGENTWALLET_API_TOKEN" -H "Content-Type: application/json" -d '${body}'</pre>
<button type="button" class="secondary" data-copy="x402-example" hidden>Copy command</button>
</section>`;
}

/** Sandbox funding changes a balance: the operator, or a token that may pay. */
export function canFund(pc: PageContext): boolean {
  const v = pc.viewer;
  return pc.sandbox && !!v && (v.kind === "operator" ? v.role === "admin" : v.permissions.includes("pay"));
}

export function overviewPage(
  pc: PageContext,
  o: { overview: Overview; deposit: DepositAddress; qrSvg: string; spend: DailySpend[]; days: string[]; recent: Transaction[]; awaiting: ApprovalItem[]; refusals: RefusalItem[]; funded?: boolean; x402?: { paidUrl: string; priceMicros: number; baseUrl: string } | null },
): Html {
  const p = pc.project!;
  const b = o.overview;
  const card = (label: string, key: string, micros: number) =>
    html`<div class="card"><div class="label">${label}</div><div class="value">$<span data-live="${key}">${formatMicros(micros)}</span></div></div>`;
  return layout(
    pc,
    `${p.name} — overview`,
    html`<h1>${p.name}</h1>
${p.paused ? html`<p class="notice warn">This project is paused: payments are refused until an operator resumes it.</p>` : ""}
${b.frozen
  ? html`<p class="notice warn" role="alert" id="frozen-wallet">This project's wallet has been frozen by USDC's issuer since ${b.frozen_since ?? "an unknown time"}: its $${formatMicros(b.frozen_amount ?? 0)} cannot move, so nothing is available and every payment is refused. Payments resume by themselves once the freeze is lifted.</p>`
  : ""}
${o.funded ? html`<p class="notice" role="status">10 test USDC sent to the deposit address; the balance updates once the deposit is confirmed.</p>` : ""}
<section aria-labelledby="bal" data-live-src="/console/p/${p.id}/live">
<h2 id="bal">Balance</h2>
<div class="cards">
${card("Available", "available", b.available)}
${card("Pending deposits", "pending", b.pending)}
${card("Held for open payments", "held", b.held)}
${card("Total funded", "total_funded", b.total_funded)}
${card("Total spent", "total_spent", b.total_spent)}
</div>
</section>
<section aria-labelledby="dep">
<h2 id="dep">Deposit address</h2>
<div class="deposit"><div class="qr" aria-hidden="true">${raw(o.qrSvg)}</div>
<div><p class="address" id="deposit-address">${o.deposit.address}</p>
<button type="button" class="secondary" data-copy="deposit-address" hidden>Copy address</button>
<p class="notice warn">Send only USDC on Base to this address. Any other token or network is lost.</p>
${canFund(pc)
  ? html`<form method="post" action="/console/p/${p.id}/fund"><input type="hidden" name="csrf" value="${pc.csrf}"><button type="submit">Fund 10 test USDC</button></form>`
  : ""}
</div></div>
</section>
<section aria-labelledby="waiting"><h2 id="waiting">Waiting for approval</h2>
${o.awaiting.length ? approvalTable(pc, o.awaiting, "Payments waiting for approval") : html`<p>No payment waits for approval.</p>`}
<p><a href="/console/p/${p.id}/approvals">Approvals</a></p>
</section>
<section aria-labelledby="refused"><h2 id="refused">Refused by spending controls</h2>${refusalList(o.refusals, null)}</section>
${o.x402 ? x402Example(o.x402) : ""}
<section aria-labelledby="spend"><h2 id="spend">Spend</h2>${spendChart(o.spend, o.days)}</section>
<section aria-labelledby="recent"><h2 id="recent">Last transactions</h2>
${o.recent.length ? transactionTable(p.id, o.recent, "The latest transactions") : html`<p>No transactions yet. Fund the deposit address to begin.</p>`}
<p><a href="/console/p/${p.id}/transactions">All transactions</a></p>
</section>`,
  );
}

export function queryString(q: Record<string, string | string[] | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => u.append(k, x));
    else u.set(k, v);
  }
  const s = u.toString();
  return s ? `?${s}` : "";
}

/**
 * Payments the spending controls refused (nothing was held), with the service's reason. Each names its agent,
 * except on that agent's own page (`own`), which lists the refusals of the agents below it too.
 */
function refusalList(refusals: RefusalItem[], own: string | null): Html {
  if (!refusals.length) return html`<p>None lately.</p>`;
  return html`<ul class="refusals">${refusals.map(
    (r) => html`<li><span class="muted">${formatTime(r.at)}</span> <strong>${r.code}</strong>${r.token_id !== own && r.token_prefix ? (r.token_name ? html` by ${r.token_name} <span class="address">${r.token_prefix}…</span>` : html` <span class="address">${r.token_prefix}…</span>`) : ""}${r.amount_micros !== null ? ` ($${formatMicros(r.amount_micros)} by ${RAIL_LABEL[r.rail as DailySpend["rail"]] ?? r.rail} to ${r.recipient})` : ""}: ${refusalSentence(r)}</li>`,
  )}</ul>`;
}

/** Whether the viewer may create, change and revoke tokens and webhooks: an operator of role admin, or a token that may manage (the server refuses the rest). */
export function canManage(pc: PageContext): boolean {
  const v = pc.viewer;
  return !!v && (v.kind === "operator" ? v.role === "admin" : v.manage);
}

/** Whether the viewer may approve or deny waiting payments: an operator of role approver or admin, or a token that may decide (the server refuses the rest). */
export function canDecide(pc: PageContext): boolean {
  const v = pc.viewer;
  return !!v && (v.kind === "operator" ? v.role !== "viewer" : v.decide);
}

/** Whether the viewer may read the audit log: every operator, and a token that may manage its project (it names operators and their addresses). */
export function canSeeAudit(pc: PageContext): boolean {
  const v = pc.viewer;
  return !!v && (v.kind === "operator" || v.manage);
}

export const INTERVAL_LABEL: Record<Interval, string> = { per_payment: "Per payment", daily: "Daily", weekly: "Weekly", monthly: "Monthly", all_time: "All time" };
export const INTERVALS = ["per_payment", "daily", "weekly", "monthly", "all_time"] as const;
export const RAILS = ["x402", "usdc_transfer", "fiat"] as const;

export function tokenState(t: TokenSummary): string {
  return t.revoked_at ? `revoked ${formatTime(t.revoked_at)}` : t.expires_at ? `expires ${formatTime(t.expires_at)}` : "active";
}

/** "daily 10 USD; allowed: api.example.com; approval above 50 USD" or "none". */
export function describeControls(c: Controls | null): string {
  if (!c) return "none";
  const parts = [
    ...c.spending_limits.map((l) => `${INTERVAL_LABEL[l.interval].toLowerCase()} $${l.amount_usd}`),
    c.allowed_recipients ? `only to ${c.allowed_recipients.join(", ") || "nobody"}` : "",
    c.blocked_recipients.length ? `never to ${c.blocked_recipients.join(", ")}` : "",
    c.allowed_rails ? `rails ${c.allowed_rails.map((r) => RAIL_LABEL[r]).join(", ")}` : "",
    c.approval_above_usd !== null ? `approval above $${c.approval_above_usd}` : "",
  ].filter(Boolean);
  return parts.join("; ") || "none";
}

export function usdText(n: number): string {
  return n.toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 6 });
}

/** Each window's spend against its limit, with a meter. */
export function windowList(windows: LimitWindow[], scope: "token" | "project"): Html {
  const mine = windows.filter((w) => w.scope === scope);
  if (!mine.length) return html`<p class="muted">No ${scope === "token" ? "" : "project "}limit windows.</p>`;
  return html`<ul class="windows">${mine.map(
    (w) => html`<li><span>${INTERVAL_LABEL[w.interval]}: $${usdText(w.spent_usd)} of $${usdText(w.limit_usd)} spent, $${usdText(w.remaining_usd)} left${w.window_end ? html` <span class="muted">(until ${formatTime(w.window_end)})</span>` : ""}</span>
<meter min="0" max="${w.limit_usd}" value="${Math.min(w.spent_usd, w.limit_usd)}" high="${w.limit_usd * 0.8}" aria-label="${INTERVAL_LABEL[w.interval]} spend of the ${scope}">${usdText(w.spent_usd)}</meter></li>`,
  )}</ul>`;
}

export type ControlsFormValues = Record<string, string>;

/** The form's values for stored controls (limits as USD text, recipients one per line, rails ticked). */
export function controlsFormValues(c: Controls | null): ControlsFormValues {
  const v: ControlsFormValues = {};
  for (const l of c?.spending_limits ?? []) v[`limit_${l.interval}`] = String(l.amount_usd);
  v.allowed_recipients = c?.allowed_recipients?.join("\n") ?? "";
  v.blocked_recipients = c?.blocked_recipients.join("\n") ?? "";
  for (const r of RAILS) if (!c?.allowed_rails || c.allowed_rails.includes(r)) v[`rail_${r}`] = "on";
  v.approval_above_usd = c?.approval_above_usd === null || c?.approval_above_usd === undefined ? "" : String(c.approval_above_usd);
  return v;
}

function controlsFields(v: ControlsFormValues, edit = false): Html {
  const usdInput = (name: string, label: string, hint?: string) =>
    html`<div class="field"><label for="${name}">${label}</label><input id="${name}" name="${name}" type="text" inputmode="decimal" autocomplete="off" placeholder="no limit" value="${v[name] ?? ""}"${hint ? raw(` aria-describedby="${name}-hint"`) : ""}>${hint ? html`<p class="muted hint" id="${name}-hint">${hint}</p>` : ""}</div>`;
  return html`<fieldset><legend>Spending limits (US dollars; empty: no limit)</legend>
<div class="grid">${INTERVALS.map((i) => usdInput(`limit_${i}`, `${INTERVAL_LABEL[i]} limit`))}</div>
<p class="muted">Daily, weekly and monthly windows are UTC calendar days, weeks from Monday, and months.</p>
</fieldset>
<fieldset><legend>Recipients</legend>
<div class="field"><label for="allowed_recipients">Only these recipients (one per line; empty: any)</label>
<textarea id="allowed_recipients" name="allowed_recipients" rows="3" spellcheck="false" aria-describedby="recipients-hint">${v.allowed_recipients ?? ""}</textarea></div>
<div class="field"><label for="blocked_recipients">Never these recipients (one per line)</label>
<textarea id="blocked_recipients" name="blocked_recipients" rows="3" spellcheck="false" aria-describedby="recipients-hint">${v.blocked_recipients ?? ""}</textarea></div>
<p class="muted hint" id="recipients-hint">A host (api.example.com or *.example.com), an address (0x…), or bank:ROUTING:ACCOUNT.${edit ? " Bank accounts are shown masked: leave a list as it is to keep it, or write its accounts again in full." : ""}</p>
${edit ? html`<input type="hidden" name="shown_allowed_recipients" value="${v.shown_allowed_recipients ?? v.allowed_recipients ?? ""}"><input type="hidden" name="shown_blocked_recipients" value="${v.shown_blocked_recipients ?? v.blocked_recipients ?? ""}">` : ""}
</fieldset>
<fieldset><legend>Rails it may pay on</legend>
${RAILS.map((r) => html`<label class="check"><input type="checkbox" name="rail_${r}"${v[`rail_${r}`] ? raw(" checked") : ""}> ${RAIL_LABEL[r]}</label>`)}
</fieldset>
<fieldset><legend>Approval</legend>
${usdInput("approval_above_usd", "Approval above (US dollars)", "USDC and bank payments above this wait for a person to approve them here; x402 payments above it are refused. Empty: never.")}
</fieldset>`;
}

export function newTokenPage(pc: PageContext, values: ControlsFormValues, error?: string): Html {
  const p = pc.project!;
  const perm = (name: string, label: string) => html`<label class="check"><input type="checkbox" name="perm_${name}"${values[`perm_${name}`] ? raw(" checked") : ""}> ${label}</label>`;
  const expires = values.expires_in_days ?? "";
  return layout(
    pc,
    `${p.name} — new token`,
    html`<h1>Create a token</h1>
${error ? html`<p class="notice error" role="alert">${error}</p>` : ""}
<form method="post" action="/console/p/${p.id}/agents" class="stack">
<input type="hidden" name="csrf" value="${pc.csrf}">
<fieldset><legend>Permissions</legend>
${perm("read", "read: balance, transactions, deposit address")}
${perm("pay", "pay: USDC transfers and bank payments")}
${perm("x402", "x402: pay x402 URLs")}
</fieldset>
<div class="field"><label for="expires_in_days">Expires</label>
<select id="expires_in_days" name="expires_in_days">${[["", "never"], ["1", "in 1 day"], ["30", "in 30 days"], ["90", "in 90 days"], ["365", "in 365 days"]].map(([d, l]) => html`<option value="${d}"${expires === d ? raw(" selected") : ""}>${l}</option>`)}</select></div>
${controlsFields(values)}
<button type="submit">Create token</button> <a href="/console/p/${p.id}/agents">Cancel</a>
</form>`,
  );
}

/** The MCP client configuration for a token, ready to paste (packages/mcp/README.md). */
export function mcpSnippet(token: NewToken, baseUrl: string, command: { command: string; args: string[] }, controls: Controls): string {
  const perPayment = controls.spending_limits.find((l) => l.interval === "per_payment");
  return JSON.stringify(mcpClientConfig({ token: token.token, permissions: token.permissions, baseUrl, command, maxPaymentUsd: perPayment?.amount_usd }), null, 2);
}

export function tokenCreatedPage(pc: PageContext, token: NewToken, snippet: string): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — token created`,
    html`<h1>Token created</h1>
<p class="notice warn" role="status">Copy the token now: it is shown only this once, and only its hash is kept.</p>
<h2 id="token-h">Token</h2>
<pre class="snippet address" id="new-token" aria-labelledby="token-h" tabindex="0">${token.token}</pre>
<button type="button" class="secondary" data-copy="new-token" hidden>Copy token</button>
<p>Permissions: ${token.permissions.join(", ")}${token.expires_at ? `; expires ${formatTime(token.expires_at)}` : ""}.</p>
<h2 id="mcp-h">MCP client configuration</h2>
<p>Paste into Claude Desktop's <code>claude_desktop_config.json</code> or Cursor's <code>.cursor/mcp.json</code>:</p>
<pre class="snippet" id="mcp-config" aria-labelledby="mcp-h" tabindex="0">${snippet}</pre>
<button type="button" class="secondary" data-copy="mcp-config" hidden>Copy configuration</button>
<p><a href="/console/p/${p.id}/agents/${token.id}">This token's controls</a> · <a href="/console/p/${p.id}/agents">All tokens</a></p>`,
  );
}

/** A created thing's page opened again (a reload, back or forward, another session): it is never shown twice. */
export function alreadyShownPage(pc: PageContext, kind: "token" | "webhook"): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — already shown`,
    html`<h1>Already shown</h1>
<p class="notice warn" role="status">${kind === "token"
      ? "This token was shown once, when it was created, and only its hash is kept: it cannot be shown again. Reloading this page created nothing."
      : "This endpoint's signing secret was shown once, when the endpoint was added: it is not shown again. Reloading this page added nothing."}</p>
<p>${kind === "token"
      ? "If it was not copied, revoke it on the token's page and create another."
      : "If it was not copied, delete the endpoint and add it again for a new secret."}</p>
<p>${kind === "token" ? html`<a href="/console/p/${p.id}/agents">All tokens</a>` : html`<a href="/console/p/${p.id}/webhooks">All endpoints</a>`}</p>`,
  );
}

export function tokenPage(pc: PageContext, t: TokenSummary, values: ControlsFormValues, refusals: RefusalItem[], opts: { error?: string; saved?: boolean } = {}): Html {
  const p = pc.project!;
  const active = !t.revoked_at && !(t.expires_at && t.expires_at <= new Date().toISOString());
  return layout(
    pc,
    `${p.name} — token ${t.display_prefix}`,
    html`<h1>Token <span class="address">${t.display_prefix}…</span></h1>
${opts.saved ? html`<p class="notice" role="status">Controls saved: the token's next request is judged by them.</p>` : ""}
${opts.error ? html`<p class="notice error" role="alert">${opts.error}</p>` : ""}
<dl class="facts">
<dt>Id</dt><dd class="address">${t.id}</dd>
<dt>Permissions</dt><dd>${t.permissions.join(", ")}</dd>
<dt>Created</dt><dd>${formatTime(t.created_at)}</dd>
<dt>State</dt><dd>${tokenState(t)}</dd>
<dt>Controls</dt><dd>${describeControls(t.controls)}</dd>
</dl>
<h2>Spend against limits</h2>
${windowList(t.windows, "token")}
${t.windows.some((w) => w.scope === "project") ? html`<h3>Project limits (every token)</h3>${windowList(t.windows, "project")}` : ""}
<h2>Refused payments</h2>
${refusalList(refusals, t.id)}
${canManage(pc) && active
  ? html`<h2>Change controls</h2>
<form method="post" action="/console/p/${p.id}/agents/${t.id}/controls" class="stack">
<input type="hidden" name="csrf" value="${pc.csrf}">
${controlsFields(values, true)}
<button type="submit">Save controls</button>
</form>
<h2>Revoke</h2>
<form method="post" action="/console/p/${p.id}/agents/${t.id}/revoke">
<input type="hidden" name="csrf" value="${pc.csrf}">
<p>Requests with this token, and with every token created below it, are refused from the moment it is revoked; this cannot be undone.</p>
<button type="submit" class="danger">Revoke token</button>
</form>`
  : ""}
<p><a href="/console/p/${p.id}/agents">All tokens</a></p>`,
  );
}

/** "Approved by ops laptop (adm_…) at 2026-11-24 16:30:00 UTC: expected invoice", or the state of an undecided approval. */
export function approvalOutcome(a: ApprovalItem): string {
  if (a.approval === "awaiting") return `waiting until ${formatTime(a.approval_until)}`;
  if (a.approval === "expired") return `expired at ${formatTime(a.approval_until)} (nobody decided)`;
  const who = a.decided_by_name ? `${a.decided_by_name}${a.decided_by ? ` (${a.decided_by})` : ""}` : (a.decided_by ?? "someone before decisions were recorded");
  return `${a.approval === "approved" ? "Approved" : "Denied"} by ${who}${a.decided_at ? ` at ${formatTime(a.decided_at)}` : ""}${a.reason ? `: ${a.reason}` : ""}`;
}

function approvalTable(pc: PageContext, rows: ApprovalItem[], caption: string, decided = false): Html {
  const p = pc.project!;
  const decide = canDecide(pc) && !decided;
  return html`<div class="table-wrap"><table class="cards-narrow">
<caption class="visually-hidden">${caption}</caption>
<thead><tr><th scope="col">Payment</th><th scope="col" class="num">Amount</th><th scope="col">Recipient</th><th scope="col">Token</th><th scope="col">${decided ? "Decision" : "Waits until"}</th>${decided ? html`<th scope="col">Status</th>` : ""}${decide ? html`<th scope="col">Decide</th>` : ""}</tr></thead>
<tbody>${rows.map(
    (a) => html`<tr><td><a href="/console/p/${p.id}/transactions/${a.id}">${RAIL_LABEL[a.rail]}${a.description ? `: ${a.description}` : ""}</a> <span class="muted">${formatTime(a.created_at)}</span></td>
<td class="num" data-label="Amount">$${formatMicros(a.amount_micros)}</td><td class="address" data-label="Recipient">${a.recipient}</td><td class="address" data-label="Token">${a.token_prefix ? `${a.token_prefix}…` : ""}</td>
<td data-label="${decided ? "Decision" : "Waits until"}">${decided ? approvalOutcome(a) : formatTime(a.approval_until)}</td>${decided ? html`<td data-label="Status">${statusCell(a.status)}</td>` : ""}
${decide
  ? html`<td><div class="actions"><form method="get" action="/console/p/${p.id}/approvals/${a.id}/approve"><button type="submit" aria-label="Approve ${formatMicros(a.amount_micros)} USD to ${a.recipient}">Approve</button></form>
<form method="get" action="/console/p/${p.id}/approvals/${a.id}/deny"><button type="submit" class="danger" aria-label="Deny ${formatMicros(a.amount_micros)} USD to ${a.recipient}">Deny</button></form></div></td>`
  : ""}</tr>`,
  )}</tbody></table></div>`;
}

/**
 * A decision asked for is confirmed on a page of its own (a GET, so nothing changes until the person confirms),
 * with an optional reason that the payment's history and the audit log keep.
 */
export function confirmDecisionPage(pc: PageContext, a: ApprovalItem, decision: "approve" | "deny", error?: string): Html {
  const p = pc.project!;
  const verb = decision === "approve" ? "Approve" : "Deny";
  return layout(
    pc,
    `${p.name} — ${verb.toLowerCase()} a payment`,
    html`<h1>${verb} this payment?</h1>
${error ? html`<p class="notice error" role="alert">${error}</p>` : ""}
<dl class="facts">
<dt>Payment</dt><dd><a href="/console/p/${p.id}/transactions/${a.id}">${RAIL_LABEL[a.rail]}${a.description ? `: ${a.description}` : ""}</a></dd>
<dt>Amount</dt><dd>$${formatMicros(a.amount_micros)}</dd>
<dt>${a.rail === "fiat" ? "Recipient (bank account holder)" : "Recipient"}</dt><dd class="address">${a.recipient}</dd>
<dt>Token</dt><dd class="address">${a.token_prefix ? `${a.token_prefix}…` : "unknown"}</dd>
<dt>Waits until</dt><dd>${formatTime(a.approval_until)}</dd>
</dl>
<p>${decision === "approve" ? "Approved, it is sent at once and cannot be called back." : "Denied, it fails and the amount and fee are credited back to the project."}</p>
<form method="post" action="/console/p/${p.id}/approvals/${a.id}/${decision}">
<input type="hidden" name="csrf" value="${pc.csrf}">
<div class="field"><label for="reason">Reason (optional; kept in the payment's history and the audit log)</label>
<textarea id="reason" name="reason" rows="3" maxlength="500"></textarea></div>
<div class="actions"><button type="submit"${decision === "deny" ? raw(' class="danger"') : ""}>Confirm: ${verb.toLowerCase()} $${formatMicros(a.amount_micros)}</button>
<a href="/console/p/${p.id}/approvals">Cancel</a></div>
</form>`,
  );
}

export function approvalsPage(pc: PageContext, list: { awaiting: ApprovalItem[]; decided: ApprovalItem[] }, notice?: { text: string; error?: boolean }): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — approvals`,
    html`<h1>Approvals</h1>
${notice ? html`<p class="notice${notice.error ? " error" : ""}" role="${notice.error ? "alert" : "status"}">${notice.text}</p>` : ""}
<p class="muted">USDC and bank payments above a token's approval threshold wait here; approved, they are sent at once; denied or not decided in time, they fail and are credited back.</p>
<h2>Waiting</h2>
${list.awaiting.length ? approvalTable(pc, list.awaiting, "Payments waiting for approval") : html`<p>No payment waits for approval.</p>`}
${canDecide(pc) ? "" : html`<p class="muted">This sign-in may see approvals but not decide them${canManage(pc) ? ": this project's own approval threshold is the operator's to apply" : ""}.</p>`}
<h2>Decided</h2>
${list.decided.length ? approvalTable(pc, list.decided, "Payments decided lately, newest first", true) : html`<p>No decisions yet.</p>`}`,
  );
}

function endpointState(e: WebhookEndpoint): string {
  if (e.state === "disabled") return `disabled ${formatTime(e.disabled_at)}${e.disabled_reason ? `: ${e.disabled_reason}` : ""}`;
  return e.failing_since ? `enabled, failing since ${formatTime(e.failing_since)}` : "enabled";
}

/** Deliveries with their attempts; a redeliver button each for a person who may manage. */
export function deliveryTable(pc: PageContext, rows: WebhookDelivery[], withUrl: boolean): Html {
  const p = pc.project!;
  const manage = canManage(pc);
  return html`<div class="table-wrap"><table class="cards-narrow">
<caption class="visually-hidden">Webhook deliveries, newest first</caption>
<thead><tr><th scope="col">Event</th>${withUrl ? html`<th scope="col">Endpoint</th>` : html`<th scope="col">Transaction</th>`}<th scope="col">State</th><th scope="col">Attempts</th><th scope="col">Last attempt</th>${manage ? html`<th scope="col">Send again</th>` : ""}</tr></thead>
<tbody>${rows.map(
    (d) => html`<tr><td><strong>${d.type}</strong> <span class="muted">${formatTime(d.occurred_at)}</span><br><span class="address muted">${d.event_id}</span></td>
${withUrl ? html`<td class="address" data-label="Endpoint">${d.url}</td>` : html`<td data-label="Transaction">${d.type.startsWith("wallet.") ? html`<span class="muted">the project's wallet</span>` : html`<a class="address" href="/console/p/${p.id}/transactions/${d.object_id}">${d.object_id}</a>`}</td>`}
<td data-label="State"><span class="status status-${d.state === "delivered" ? "completed" : d.state === "failed" ? "failed" : "pending"}">${d.state}</span>${d.state === "pending" ? html` <span class="muted">next ${formatTime(d.next_attempt_at)}</span>` : ""}</td>
<td class="num" data-label="Attempts">${d.attempts}</td>
<td data-label="Last attempt">${d.last_attempt_at ? html`${formatTime(d.last_attempt_at)}: ${d.last_status !== null ? `HTTP ${d.last_status}` : ""}${d.last_error ? ` ${d.last_error}` : ""}` : html`<span class="muted">none yet</span>`}</td>
${manage
  ? html`<td><form method="post" action="/console/p/${p.id}/webhooks/events/${d.event_id}/redeliver"><input type="hidden" name="csrf" value="${pc.csrf}"><input type="hidden" name="back" value="${withUrl ? `transactions/${d.object_id}` : `webhooks/${d.endpoint_id}`}"><button type="submit" class="secondary" aria-label="Redeliver ${d.type} event ${d.event_id}">Redeliver</button></form></td>`
  : ""}</tr>`,
  )}</tbody></table></div>`;
}

export function webhooksPage(pc: PageContext, endpoints: WebhookEndpoint[], types: readonly string[], form: { url?: string; events?: string[]; error?: string; notice?: string } = {}): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — webhooks`,
    html`<h1>Webhooks</h1>
${form.notice ? html`<p class="notice" role="status">${form.notice}</p>` : ""}
<p class="muted">Each endpoint receives this project's payment and deposit events, signed (Standard Webhooks), retried for about 2.6 days.</p>
${endpoints.length
  ? html`<div class="table-wrap"><table class="cards-narrow"><caption class="visually-hidden">Webhook endpoints of this project</caption>
<thead><tr><th scope="col">URL</th><th scope="col">Events</th><th scope="col">State</th><th scope="col" class="hide-narrow">Created</th></tr></thead>
<tbody>${endpoints.map((e) => html`<tr><td><a class="address" href="/console/p/${p.id}/webhooks/${e.id}">${e.url}</a></td><td data-label="Events">${e.events ? e.events.join(", ") : "every event"}</td><td data-label="State">${endpointState(e)}</td><td class="hide-narrow">${formatTime(e.created_at)}</td></tr>`)}</tbody></table></div>`
  : html`<p>No endpoints yet.</p>`}
${canManage(pc)
  ? html`<h2>Add an endpoint</h2>
${form.error ? html`<p class="notice error" role="alert">${form.error}</p>` : ""}
<form method="post" action="/console/p/${p.id}/webhooks" class="stack">
<input type="hidden" name="csrf" value="${pc.csrf}">
<div class="field"><label for="wh-url">URL</label><input id="wh-url" name="url" type="url" required spellcheck="false" autocomplete="off" value="${form.url ?? ""}" placeholder="https://example.com/hooks/agentwallet"></div>
<fieldset><legend>Events (none ticked: every event)</legend>
${types.map((t) => html`<label class="check"><input type="checkbox" name="event_${t}"${form.events?.includes(t) ? raw(" checked") : ""}> ${t}</label>`)}
</fieldset>
<button type="submit">Add endpoint</button>
</form>`
  : ""}`,
  );
}

export function webhookCreatedPage(pc: PageContext, e: WebhookEndpoint, secret: string): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — webhook endpoint added`,
    html`<h1>Endpoint added</h1>
<p class="notice warn" role="status">Copy the signing secret now: it is shown only this once (it is stored encrypted).</p>
<p>Deliveries to <span class="address">${e.url}</span> (${e.events ? e.events.join(", ") : "every event"}) are signed with:</p>
<h2 id="secret-h">Signing secret</h2>
<pre class="snippet address" id="webhook-secret" aria-labelledby="secret-h" tabindex="0">${secret}</pre>
<button type="button" class="secondary" data-copy="webhook-secret" hidden>Copy secret</button>
<p><a href="/console/p/${p.id}/webhooks/${e.id}">This endpoint's deliveries</a> · <a href="/console/p/${p.id}/webhooks">All endpoints</a></p>`,
  );
}

export function webhookPage(pc: PageContext, e: WebhookEndpoint, deliveries: WebhookDelivery[], notice?: string): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — webhook endpoint`,
    html`<h1>Webhook endpoint</h1>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
<dl class="facts">
<dt>URL</dt><dd class="address">${e.url}</dd>
<dt>Id</dt><dd class="address">${e.id}</dd>
<dt>Events</dt><dd>${e.events ? e.events.join(", ") : "every event"}</dd>
<dt>State</dt><dd>${endpointState(e)}</dd>
<dt>Created</dt><dd>${formatTime(e.created_at)}</dd>
</dl>
${canManage(pc)
  ? html`<div class="actions">${e.state === "disabled"
      ? html`<form method="post" action="/console/p/${p.id}/webhooks/${e.id}/enable"><input type="hidden" name="csrf" value="${pc.csrf}"><button type="submit">Enable again</button></form>`
      : ""}<form method="post" action="/console/p/${p.id}/webhooks/${e.id}/delete"><input type="hidden" name="csrf" value="${pc.csrf}"><button type="submit" class="danger">Delete endpoint</button></form></div>`
  : ""}
<h2>Recent deliveries</h2>
${deliveries.length ? deliveryTable(pc, deliveries, false) : html`<p>No deliveries yet.</p>`}
<p><a href="/console/p/${p.id}/webhooks">All endpoints</a></p>`,
  );
}

export function errorPage(pc: PageContext, status: number, message: string): Html {
  return layout(pc, status === 404 ? "Not found" : "Error", html`<h1>${status === 404 ? "Not found" : status === 403 ? "Not allowed" : "Something went wrong"}</h1><p class="notice error" role="alert">${message}</p><p><a href="/console">Back to the console</a></p>`);
}
