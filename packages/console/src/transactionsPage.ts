/**
 * The transactions list and one transaction's page: who paid (the agent: its token's name, else its
 * prefix), whom (the counterparty), the fee beside its payment, the page's place in the list, and times as
 * `<time>` in UTC that the console's script shows in the viewer's time zone (UTC stays on hover).
 */
import type { Transaction } from "@agentwallet/api";
import type { AgentName, ApprovalItem, Counterparty, HistoryEntry, ListFilters, ListPage, ListedTransaction, Rail, WebhookDelivery } from "./backend.ts";
import { formatAmount, formatMicros, formatTime } from "./format.ts";
import { type Html, html, raw } from "./html.ts";
import { failureSentence } from "./outcomes.ts";
import { type PageContext, RAILS, RAIL_LABEL, STATUSES, TYPE_LABEL, approvalOutcome, canDecide, deliveryTable, layout, queryString, statusCell } from "./pages.ts";

/** The types the list shows as rows (a fee is shown on its payment's row). */
export const LIST_TYPES = ["usdc_fund", "payment", "x402_payment", "usdc_transfer"] as const;

/** A time in UTC, shown in the viewer's zone by the console's script; UTC in its title. */
export function timeOf(iso: string | null | undefined): Html | string {
  if (!iso) return "";
  return html`<time datetime="${iso}" title="${formatTime(iso)}" data-local>${formatTime(iso)}</time>`;
}

/** The filters as query parameters (for the pager, the export link and the clear link). */
export function filterParams(f: ListFilters): Record<string, string | string[] | undefined> {
  return {
    type: f.type,
    status: f.status,
    rail: f.rail,
    agent: f.agent,
    sub_agents: f.agent && f.sub_agents ? "1" : undefined,
    counterparty: f.counterparty,
    min_usd: f.min_usd,
    max_usd: f.max_usd,
    created_after: f.created_after,
    created_before: f.created_before,
  };
}

export function agentLabel(a: { name: string | null; prefix: string } | null): string {
  return a ? (a.name ?? `${a.prefix}…`) : "";
}

/** The counterparty in a cell: an x402 target's host and path, an address with a copy button, a bank holder with the account's last digits. */
function counterpartyCell(c: Counterparty | null, rowId: string): Html | string {
  if (!c) return "";
  if (c.kind === "x402") return html`<span class="cp-host">${c.host}</span><span class="muted address">${c.path}</span>`;
  if (c.kind === "bank") return html`${c.holder}${c.account ? html` <span class="muted">${c.account}</span>` : ""}`;
  const id = `cp-${rowId}`;
  return html`${c.kind === "sender" ? html`<span class="muted">from </span>` : ""}<span class="address" id="${id}">${c.address}</span> <button type="button" class="secondary copy" data-copy="${id}" aria-label="Copy address ${c.address}" hidden>Copy</button>`;
}

/** "x402 target api.example.com/v1/x", "address 0x…", "Acme LLC (account ••••1234)": the counterparty in words (CSV, the detail page). */
export function counterpartyText(c: Counterparty | null): string {
  if (!c) return "";
  if (c.kind === "x402") return `${c.host}${c.path}`;
  if (c.kind === "bank") return c.account ? `${c.holder} (account ${c.account})` : c.holder;
  return c.address;
}


function listTable(projectId: string, rows: ListedTransaction[]): Html {
  return html`<div class="table-wrap"><table class="cards-narrow txlist">
<caption class="visually-hidden">Transactions, newest first; a payment's fee beside its amount</caption>
<thead><tr><th scope="col">Transaction</th><th scope="col">Agent</th><th scope="col">Counterparty</th><th scope="col" class="num">Amount</th><th scope="col">Status</th><th scope="col">Created</th></tr></thead>
<tbody>${rows.map(
    (t) => html`<tr>
<td data-label="Transaction"><a href="/console/p/${projectId}/transactions/${t.id}">${TYPE_LABEL[t.type] ?? t.type}</a>${t.description ? html`<div class="muted small">${t.description}</div>` : ""}</td>
<td data-label="Agent">${t.agent ? html`<span class="agent" title="${t.agent.prefix}…">${agentLabel(t.agent)}</span>` : html`<span class="muted">—</span>`}</td>
<td data-label="Counterparty">${counterpartyCell(t.counterparty, t.id)}</td>
<td data-label="Amount" class="num">${t.type === "usdc_fund" ? "+" : ""}$${formatMicros(t.amount_micros)}${t.fee_micros !== null ? html`<div class="muted small fee">+ $${formatMicros(t.fee_micros)} fee</div>` : ""}</td>
<td data-label="Status">${statusCell(t.status)}</td>
<td data-label="Created">${timeOf(t.created_at)}</td>
</tr>`,
  )}</tbody>
</table></div>`;
}

export function transactionsPage(pc: PageContext, f: ListFilters, list: ListPage, agents: AgentName[], filtersSupported: boolean): Html {
  const p = pc.project!;
  const base = `/console/p/${p.id}/transactions`;
  const params = filterParams(f);
  const rows = list.rows;
  const first = rows[0];
  const last = rows[rows.length - 1];
  const off = filtersSupported ? "" : raw(" disabled");
  const selected = (on: boolean) => (on ? raw(" selected") : "");
  // A capped count is a floor: "of 10,000+", and a page beyond it is "past the first 10,000".
  const total = `${list.total.toLocaleString("en-US")}${list.total_capped ? "+" : ""}`;
  const place = !rows.length
    ? `0 of ${total}`
    : list.position_capped
      ? `Past the first ${(list.position - 1).toLocaleString("en-US")} of ${total}`
      : `${list.position.toLocaleString("en-US")}–${(list.position + rows.length - 1).toLocaleString("en-US")} of ${total}`;
  const agentOptions = agentTree(agents);
  return layout(
    pc,
    `${p.name} — transactions`,
    html`<h1>Transactions</h1>
<form class="filters" method="get" action="${base}" aria-label="Filters">
<div><label for="f-agent">Agent</label><select id="f-agent" name="agent"${off}><option value="">All agents</option>${agentOptions.map(
      ({ a, depth }) => html`<option value="${a.id}"${selected(f.agent === a.id)}>${"\u00a0\u00a0".repeat(depth)}${agentLabel(a)}${a.revoked ? " (revoked)" : ""}</option>`,
    )}</select>
<label class="check"><input type="checkbox" name="sub_agents" value="1"${f.sub_agents ? raw(" checked") : ""}${off}> and its sub-agents</label></div>
<div><label for="f-rail">Rail</label><select id="f-rail" name="rail" multiple size="3"${off}>${RAILS.map((r) => html`<option value="${r}"${selected(!!f.rail?.includes(r))}>${RAIL_LABEL[r]}</option>`)}</select></div>
<div><label for="f-type">Type</label><select id="f-type" name="type" multiple size="3"${off}>${LIST_TYPES.map((t) => html`<option value="${t}"${selected(!!f.type?.includes(t))}>${TYPE_LABEL[t]}</option>`)}</select></div>
<div><label for="f-status">Status</label><select id="f-status" name="status" multiple size="3"${off}>${STATUSES.map((s) => html`<option value="${s}"${selected(!!f.status?.includes(s))}>${s}</option>`)}</select></div>
<div><label for="f-cp">Counterparty contains</label><input id="f-cp" name="counterparty" type="text" placeholder="host, address or name" value="${f.counterparty ?? ""}" maxlength="200"${off}></div>
<div class="range"><label for="f-min">Amount from ($)</label><input id="f-min" name="min_usd" type="text" inputmode="decimal" placeholder="0.00" value="${f.min_usd ?? ""}"${off}></div>
<div class="range"><label for="f-max">Amount to ($)</label><input id="f-max" name="max_usd" type="text" inputmode="decimal" placeholder="any" value="${f.max_usd ?? ""}"${off}></div>
<div><label for="f-after">Created after (UTC)</label><input id="f-after" name="created_after" type="text" placeholder="2026-11-01T00:00:00Z" value="${f.created_after ?? ""}"${off}></div>
<div><label for="f-before">Created before (UTC)</label><input id="f-before" name="created_before" type="text" placeholder="2026-12-01T00:00:00Z" value="${f.created_before ?? ""}"${off}></div>
<div><button type="submit">Apply</button> <a href="${base}">Clear</a></div>
</form>
<p class="muted" role="status" id="position">${place}</p>
${rows.length ? listTable(p.id, rows) : html`<p>No transaction matches.</p>`}
<nav class="pager" aria-label="Pages">${list.has_newer && first ? html`<a href="${base}${queryString({ ...params, ending_before: first.id })}" rel="prev">Previous page</a>` : ""}${list.has_older && last ? html`<a href="${base}${queryString({ ...params, starting_after: last.id })}" rel="next">Next page</a>` : ""}</nav>
<p><a href="${base}.csv${queryString(params)}" download>Export these ${total} as CSV</a></p>`,
  );
}

/** The agents as a tree (children below their parent, indented), for the filter's list. */
function agentTree(agents: AgentName[]): { a: AgentName; depth: number }[] {
  const ids = new Set(agents.map((a) => a.id));
  const children = new Map<string | null, AgentName[]>();
  for (const a of agents) {
    const parent = a.parent_id && ids.has(a.parent_id) ? a.parent_id : null;
    children.set(parent, [...(children.get(parent) ?? []), a]);
  }
  const out: { a: AgentName; depth: number }[] = [];
  const walk = (parent: string | null, depth: number) => {
    for (const a of children.get(parent) ?? []) {
      out.push({ a, depth });
      if (out.length <= agents.length) walk(a.id, depth + 1);
    }
  };
  walk(null, 0);
  return out;
}

const RAIL_NAME: Record<Rail, string> = RAIL_LABEL;

export function transactionPage(
  pc: PageContext,
  t: Transaction & Record<string, unknown>,
  listed: ListedTransaction | null,
  history: HistoryEntry[] = [],
  approval: ApprovalItem | null = null,
  deliveries: WebhookDelivery[] = [],
  notice?: string,
): Html {
  const p = pc.project!;
  const txHash = typeof t.tx_hash === "string" ? t.tx_hash : null;
  const fact = (label: string, value: Html | string | null | undefined) => (value ? html`<dt>${label}</dt><dd>${value}</dd>` : "");
  const meta = t.metadata && typeof t.metadata === "object" ? Object.entries(t.metadata as Record<string, string>) : [];
  const rail = typeof t.rail === "string" && t.rail in RAIL_NAME ? RAIL_NAME[t.rail as Rail] : null;
  const c = listed?.counterparty ?? null;
  const failed = t.status === "failed" || t.status === "reversed";
  const failure = failed ? failureSentence(typeof t.failure_code === "string" ? t.failure_code : null, typeof t.failure_message === "string" ? t.failure_message : null, t.status) : null;
  return layout(
    pc,
    `${TYPE_LABEL[t.type] ?? t.type} ${t.id}`,
    html`<h1>${TYPE_LABEL[t.type] ?? t.type} of ${formatAmount(t.amount, t.currency)}</h1>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
${failure ? html`<p class="notice error">${failure}</p>` : ""}
<dl class="facts">
${fact("Id", html`<span class="address">${t.id}</span>`)}
${fact("Status", statusCell(t.status))}
${fact("Agent", listed?.agent ? html`${agentLabel(listed.agent)} <span class="muted address">${listed.agent.prefix}…</span>` : null)}
${fact("Rail", rail)}
${fact(c?.kind === "x402" ? "Merchant" : c?.kind === "sender" ? "From" : "Recipient", c ? (c.kind === "address" || c.kind === "sender" ? html`<span class="address">${c.address}</span>` : counterpartyText(c)) : typeof t.recipient === "string" ? html`<span class="address">${t.recipient}</span>` : null)}
${fact("Amount", formatAmount(t.amount, t.currency))}
${fact("Fee", listed?.fee_micros !== null && listed?.fee_micros !== undefined ? `$${formatMicros(listed.fee_micros)}` : null)}
${fact("Description", t.description)}
${fact("Created", timeOf(t.created_at))}
${fact("Completed", timeOf(t.completed_at))}
${fact("On-chain transaction", txHash ? (pc.explorerTxUrl ? html`<a class="address" href="${pc.explorerTxUrl}${txHash}" rel="noreferrer noopener" target="_blank">${txHash}</a>` : html`<span class="address">${txHash}</span>`) : null)}
${fact(t.type === "platform_fee" ? "Payment" : "Fee transaction", typeof t.payment_id === "string" ? html`<a href="/console/p/${p.id}/transactions/${t.payment_id}">${t.payment_id}</a>` : null)}
</dl>
${approval ? html`<h2>Approval</h2><p>${approvalOutcome(approval)}.</p>${approval.approval === "awaiting" && canDecide(pc) ? html`<p><a href="/console/p/${p.id}/approvals">Decide on the approvals page</a></p>` : ""}` : ""}
${history.length
  ? html`<h2>Status history</h2><ol class="history">${history.map((h) => html`<li>${timeOf(h.at)} ${statusCell(h.status)} ${h.text}</li>`)}</ol>`
  : ""}
${deliveries.length ? html`<h2>Webhook deliveries</h2>${deliveryTable(pc, deliveries, true)}` : ""}
${meta.length ? html`<h2>Metadata</h2><dl class="facts">${meta.map(([k, v]) => html`<dt>${k}</dt><dd>${v}</dd>`)}</dl>` : ""}
<p><a href="/console/p/${p.id}/transactions">Back to transactions</a></p>`,
  );
}
