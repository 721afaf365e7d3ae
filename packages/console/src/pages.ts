/** The console's pages as functions of data to HTML. No I/O here: routes (index.ts) read, pages render. */
import type { DepositAddress, Transaction, TransactionList } from "@agentwallet/api";
import type { DailySpend, Overview, ProjectSummary, TokenSummary, TransactionQuery, Viewer } from "./backend.ts";
import { formatAmount, formatMicros, formatTime } from "./format.ts";
import { type Html, html, raw } from "./html.ts";

export type PageContext = {
  viewer: Viewer | null;
  csrf: string;
  /** The project in view, for the navigation. */
  project?: ProjectSummary;
  current?: "overview" | "transactions" | "agents" | "projects";
  sandbox: boolean;
  /** Base of a block explorer's transaction links (live mode), or null (sandbox: no links). */
  explorerTxUrl: string | null;
};

export const TYPES = ["usdc_fund", "payment", "x402_payment", "usdc_transfer", "platform_fee"] as const;
export const STATUSES = ["pending", "processing", "completed", "failed", "reversed"] as const;

const TYPE_LABEL: Record<string, string> = {
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
        ${p ? [link(`/console/p/${p.id}`, "Overview", "overview"), link(`/console/p/${p.id}/transactions`, "Transactions", "transactions"), link(`/console/p/${p.id}/agents`, "Agents", "agents")] : ""}
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

function statusCell(status: string): Html {
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
const RAIL_LABEL: Record<DailySpend["rail"], string> = { x402: "x402", usdc_transfer: "USDC transfer", fiat: "Bank (ACH)" };

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

/** Sandbox funding changes a balance: the operator, or a token that may pay. */
export function canFund(pc: PageContext): boolean {
  const v = pc.viewer;
  return pc.sandbox && !!v && (v.kind === "operator" || v.permissions.includes("pay"));
}

export function overviewPage(
  pc: PageContext,
  o: { overview: Overview; deposit: DepositAddress; qrSvg: string; spend: DailySpend[]; days: string[]; recent: Transaction[]; funded?: boolean },
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
<section aria-labelledby="spend"><h2 id="spend">Spend</h2>${spendChart(o.spend, o.days)}</section>
<section aria-labelledby="recent"><h2 id="recent">Last transactions</h2>
${o.recent.length ? transactionTable(p.id, o.recent, "The latest transactions") : html`<p>No transactions yet. Fund the deposit address to begin.</p>`}
<p><a href="/console/p/${p.id}/transactions">All transactions</a></p>
</section>`,
  );
}

function queryString(q: Record<string, string | string[] | undefined>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v === undefined || v === "") continue;
    if (Array.isArray(v)) v.forEach((x) => u.append(k, x));
    else u.set(k, v);
  }
  const s = u.toString();
  return s ? `?${s}` : "";
}

export function transactionsPage(pc: PageContext, q: TransactionQuery, list: TransactionList, filtersSupported: boolean): Html {
  const p = pc.project!;
  const rows = list.transactions;
  const last = rows[rows.length - 1];
  const next = list.has_more && last ? queryString({ type: q.type, status: q.status, created_after: q.created_after, created_before: q.created_before, starting_after: last.id }) : null;
  const checked = (list: string[] | undefined, v: string) => (list?.includes(v) ? raw(" selected") : "");
  return layout(
    pc,
    `${p.name} — transactions`,
    html`<h1>Transactions</h1>
<form class="filters" method="get" action="/console/p/${p.id}/transactions" aria-label="Filters">
<div><label for="f-type">Type</label><select id="f-type" name="type" multiple size="3"${filtersSupported ? "" : raw(" disabled")}>${TYPES.map((t) => html`<option value="${t}"${checked(q.type, t)}>${TYPE_LABEL[t]}</option>`)}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status" multiple size="3"${filtersSupported ? "" : raw(" disabled")}>${STATUSES.map((s) => html`<option value="${s}"${checked(q.status, s)}>${s}</option>`)}</select></div>
<div><label for="f-after">Created after (UTC)</label><input id="f-after" name="created_after" type="text" placeholder="2026-11-01T00:00:00Z" value="${q.created_after ?? ""}"${filtersSupported ? "" : raw(" disabled")}></div>
<div><label for="f-before">Created before (UTC)</label><input id="f-before" name="created_before" type="text" placeholder="2026-12-01T00:00:00Z" value="${q.created_before ?? ""}"${filtersSupported ? "" : raw(" disabled")}></div>
<div><button type="submit">Apply</button> <a href="/console/p/${p.id}/transactions">Clear</a></div>
</form>
<p class="muted" role="status">${list.total_count.toLocaleString("en-US")} transaction${list.total_count === 1 ? "" : "s"} in this project${q.starting_after ? "; showing a later page" : ""}.</p>
${rows.length ? transactionTable(p.id, rows, "Transactions, newest first") : html`<p>No transaction matches.</p>`}
<div class="pager">${q.starting_after ? html`<a href="/console/p/${p.id}/transactions${queryString({ type: q.type, status: q.status, created_after: q.created_after, created_before: q.created_before })}">First page</a>` : ""}${next ? html`<a href="/console/p/${p.id}/transactions${next}" rel="next">Next page</a>` : ""}</div>`,
  );
}

export function transactionPage(pc: PageContext, t: Transaction & Record<string, unknown>): Html {
  const p = pc.project!;
  const txHash = typeof t.tx_hash === "string" ? t.tx_hash : null;
  const fact = (label: string, value: Html | string | null | undefined) => (value ? html`<dt>${label}</dt><dd>${value}</dd>` : "");
  const meta = t.metadata && typeof t.metadata === "object" ? Object.entries(t.metadata as Record<string, string>) : [];
  return layout(
    pc,
    `${TYPE_LABEL[t.type] ?? t.type} ${t.id}`,
    html`<h1>${TYPE_LABEL[t.type] ?? t.type} of ${formatAmount(t.amount, t.currency)}</h1>
<dl class="facts">
${fact("Id", html`<span class="address">${t.id}</span>`)}
${fact("Status", statusCell(t.status))}
${fact("Rail", typeof t.rail === "string" ? t.rail : null)}
${fact("Recipient", typeof t.recipient === "string" ? html`<span class="address">${t.recipient}</span>` : null)}
${fact("Amount", formatAmount(t.amount, t.currency))}
${fact("Description", t.description)}
${fact("Merchant", t.merchant_name)}
${fact("Created", formatTime(t.created_at))}
${fact("Completed", formatTime(t.completed_at))}
${fact("Failure", t.failure_code ? `${String(t.failure_code)}: ${String(t.failure_message ?? "")}` : null)}
${fact("On-chain transaction", txHash ? (pc.explorerTxUrl ? html`<a class="address" href="${pc.explorerTxUrl}${txHash}" rel="noreferrer noopener" target="_blank">${txHash}</a>` : html`<span class="address">${txHash}</span>`) : null)}
${fact(t.type === "platform_fee" ? "Payment" : "Fee", typeof t.payment_id === "string" ? html`<a href="/console/p/${p.id}/transactions/${t.payment_id}">${t.payment_id}</a>` : null)}
</dl>
${meta.length ? html`<h2>Metadata</h2><dl class="facts">${meta.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>` : ""}
<p><a href="/console/p/${p.id}/transactions">Back to transactions</a></p>`,
  );
}

export function agentsPage(pc: PageContext, tokens: TokenSummary[]): Html {
  const p = pc.project!;
  return layout(
    pc,
    `${p.name} — agents`,
    html`<h1>Agents (API tokens)</h1>
<div class="table-wrap"><table>
<caption class="visually-hidden">API tokens of this project</caption>
<thead><tr><th scope="col">Token</th><th scope="col">Permissions</th><th scope="col">Created</th><th scope="col">State</th></tr></thead>
<tbody>${tokens.map((t) => html`<tr><td class="address">${t.display_prefix}…</td><td>${t.permissions.join(", ")}</td><td>${formatTime(t.created_at)}</td><td>${t.revoked_at ? `revoked ${formatTime(t.revoked_at)}` : t.expires_at ? `expires ${formatTime(t.expires_at)}` : "active"}</td></tr>`)}</tbody>
</table></div>`,
  );
}

export function errorPage(pc: PageContext, status: number, message: string): Html {
  return layout(pc, status === 404 ? "Not found" : "Error", html`<h1>${status === 404 ? "Not found" : status === 403 ? "Not allowed" : "Something went wrong"}</h1><p class="notice error" role="alert">${message}</p><p><a href="/console">Back to the console</a></p>`);
}
