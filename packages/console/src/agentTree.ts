/**
 * The Agents page as a tree of tokens: each operator's token with the child tokens it handed out below it, to
 * any depth, as nested lists (a screen reader announces each level and its size, and the indentation shows it
 * on a narrow screen). Each token shows its name, its parent, and its spend against every window that binds it,
 * its own and those it inherits (the numbers of its `GET /v1/limits`); revoking one asks first, naming the
 * tokens below it that go with it.
 */
import type { Controls, LimitWindow, TokenSummary } from "./backend.ts";
import { type Html, html } from "./html.ts";
import { type PageContext, INTERVAL_LABEL, canManage, describeControls, layout, tokenState, usdText, windowList } from "./pages.ts";

/** A token's label for people: its name with its prefix, or its prefix alone. */
export function tokenLabel(t: Pick<TokenSummary, "name" | "display_prefix">): string {
  return t.name ? `${t.name} (${t.display_prefix}…)` : `${t.display_prefix}…`;
}

const isActive = (t: TokenSummary, now: string) => !t.revoked_at && !(t.expires_at && t.expires_at <= now);

/** Children by parent id, in the order given (oldest first); a token whose parent is not listed is a root. */
function childrenOf(tokens: TokenSummary[]): { roots: TokenSummary[]; children: Map<string, TokenSummary[]> } {
  const ids = new Set(tokens.map((t) => t.id));
  const children = new Map<string, TokenSummary[]>();
  const roots: TokenSummary[] = [];
  for (const t of tokens) {
    if (t.parent_id === null || !ids.has(t.parent_id)) roots.push(t);
    else children.set(t.parent_id, [...(children.get(t.parent_id) ?? []), t]);
  }
  return { roots, children };
}

/** Every token below `id` in `children`, depth first. */
export function descendantsIn(children: Map<string, TokenSummary[]>, id: string): TokenSummary[] {
  return (children.get(id) ?? []).flatMap((c) => [c, ...descendantsIn(children, c.id)]);
}

/** "Daily (own)", "Allowance (own)", "Daily (from planner (aw_test_ab12…))", "Allowance (from planner …)". */
function windowLabel(w: LimitWindow, byId: Map<string, TokenSummary>): string {
  const what = w.scope === "allowance" || w.scope === "ancestor_allowance" ? "Allowance" : INTERVAL_LABEL[w.interval];
  if (w.scope === "token" || w.scope === "allowance") return `${what} (own)`;
  const from = w.token_id ? byId.get(w.token_id) : undefined;
  return `${what} (from ${from ? tokenLabel(from) : (w.token_id ?? "an ancestor")})`;
}

/** The token's own and inherited windows (the project's are shown once, below the tree). */
function spendList(t: TokenSummary, byId: Map<string, TokenSummary>): Html {
  const mine = t.windows.filter((w) => w.scope !== "project");
  if (!mine.length) return html`<p class="muted">No limits of its own or inherited.</p>`;
  return html`<ul class="windows">${mine.map((w) => {
    const label = windowLabel(w, byId);
    return html`<li data-window="${w.scope}:${w.token_id ?? ""}:${w.interval}">${label}: $${usdText(w.spent_usd)} of $${usdText(w.limit_usd)} spent, $${usdText(w.remaining_usd)} left
<meter min="0" max="${w.limit_usd}" value="${Math.min(w.spent_usd, w.limit_usd)}" high="${w.limit_usd * 0.8}" aria-label="${label} spend of ${tokenLabel(t)}">${usdText(w.spent_usd)}</meter></li>`;
  })}</ul>`;
}

function node(pc: PageContext, t: TokenSummary, tree: ReturnType<typeof childrenOf>, byId: Map<string, TokenSummary>, now: string): Html {
  const p = pc.project!;
  const parent = t.parent_id ? byId.get(t.parent_id) : undefined;
  const kids = tree.children.get(t.id) ?? [];
  const below = descendantsIn(tree.children, t.id).length;
  return html`<li id="token-${t.id}"><div class="token-node">
<p class="token-head">${t.name
    ? html`<a href="/console/p/${p.id}/agents/${t.id}"><strong>${t.name}</strong> <span class="address">${t.display_prefix}…</span></a>`
    : html`<a href="/console/p/${p.id}/agents/${t.id}" aria-label="Token ${t.display_prefix}"><strong class="address">${t.display_prefix}…</strong></a>`} <span class="state">${tokenState(t)}</span>${canManage(pc) && isActive(t, now) ? html` <a class="button danger small" href="/console/p/${p.id}/agents/${t.id}/revoke" aria-label="Revoke ${tokenLabel(t)}">Revoke…</a>` : ""}</p>
<p class="muted">${parent ? html`Parent: ${tokenLabel(parent)}` : t.parent_id ? `Parent: ${t.parent_id}` : "Issued by an operator"}${below ? ` · ${below} token${below > 1 ? "s" : ""} below` : ""} · ${t.permissions.join(", ")} · controls: ${describeControls(t.controls)}</p>
${spendList(t, byId)}
</div>${kids.length ? html`<ul class="token-tree" aria-label="Tokens created by ${tokenLabel(t)}">${kids.map((k) => node(pc, k, tree, byId, now))}</ul>` : ""}</li>`;
}

export function agentsPage(pc: PageContext, tokens: TokenSummary[], projectControls: Controls | null, notice?: string): Html {
  const p = pc.project!;
  const projectWindows = tokens[0]?.windows ?? [];
  const tree = childrenOf(tokens);
  const byId = new Map(tokens.map((t) => [t.id, t]));
  const now = new Date().toISOString();
  return layout(
    pc,
    `${p.name} — agents`,
    html`<h1>Agents (API tokens)</h1>
${notice ? html`<p class="notice" role="status">${notice}</p>` : ""}
${canManage(pc) ? html`<p><a class="button" href="/console/p/${p.id}/agents/new">Create a token</a></p>` : ""}
<p class="muted">Tokens an agent created with <code>POST /v1/tokens</code> are listed below the token that created them. Each spends within its own limits and every limit above it; what a token below spends counts against its ancestors' limits too.</p>
${tokens.length ? html`<ul class="token-tree" aria-label="API tokens of this project">${tree.roots.map((t) => node(pc, t, tree, byId, now))}</ul>` : html`<p>No tokens yet.</p>`}
<h2>Project controls</h2>
<p>Every token obeys these too: ${describeControls(projectControls)}.</p>
${projectWindows.some((w) => w.scope === "project") ? windowList(projectWindows, "project") : ""}`,
  );
}

/** Asks before revoking a token, naming every active token below it, which the revocation takes at once. */
export function confirmRevokePage(pc: PageContext, t: TokenSummary, tokens: TokenSummary[]): Html {
  const p = pc.project!;
  const now = new Date().toISOString();
  const below = descendantsIn(childrenOf(tokens).children, t.id).filter((d) => isActive(d, now));
  return layout(
    pc,
    `${p.name} — revoke a token`,
    html`<h1>Revoke ${tokenLabel(t)}?</h1>
<p>Requests with this token are refused from the moment it is revoked; this cannot be undone.</p>
${below.length
  ? html`<p class="notice" role="note"><strong>This also revokes, at once, the ${below.length} active token${below.length > 1 ? "s" : ""} below it:</strong></p>
<ul>${below.map((d) => html`<li>${tokenLabel(d)}</li>`)}</ul>`
  : html`<p>No active token was created below it.</p>`}
<form method="post" action="/console/p/${p.id}/agents/${t.id}/revoke">
<input type="hidden" name="csrf" value="${pc.csrf}">
<div class="actions"><button type="submit" class="danger">Confirm: revoke ${below.length ? `it and ${below.length} below it` : "it"}</button>
<a href="/console/p/${p.id}/agents">Cancel</a></div>
</form>`,
  );
}
