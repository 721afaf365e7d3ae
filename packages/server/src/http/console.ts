/**
 * The web console's port (`@agentwallet/console`), implemented over the service's own functions and ledger
 * reads: the same token rules as the API (a revoked or expired token ends its console sessions on the next
 * page), the same balance and transaction shapes. Registered by `createApp` at /console.
 */
import { createHmac, randomBytes } from "node:crypto";
import { resolve } from "node:path";
import type { Permission } from "@agentwallet/api";
import { type ApprovalItem, type ConsoleBackend, type DailySpend, type HistoryEntry, type WebhookDelivery, type TokenSummary, type Viewer, registerConsole } from "@agentwallet/console";
import type { FastifyInstance } from "fastify";
import type { HttpDeps } from "./httpDeps.ts";
import { getDepositAddress } from "../services/getDepositAddress.ts";
import { listTransactions } from "../services/listTransactions.ts";
import { getTransaction } from "../services/getTransaction.ts";
import { DomainError, badRequest, forbidden } from "../domain/errors.ts";
import { parseListQuery } from "./listQuery.ts";
import { statusOf } from "./errorStatus.ts";
import { hashToken, isWellFormedToken } from "../tokens.ts";
import { issueToken, mayDecideApprovals, mayManageProject, revokeToken } from "../services/tokens.ts";
import { getLimits, renderControls, updateTokenControls } from "../services/spendingControls.ts";
import { decidePayment } from "../services/approvals.ts";
import { parseControls } from "../domain/spending.ts";
import type { PaymentRow } from "../ledger/store.ts";
import { checkAdminCredential } from "../services/adminCredentials.ts";
import { WEBHOOK_EVENT_TYPES } from "../ledger/webhookOutbox.ts";
import { createWebhookEndpoint, deleteWebhookEndpoint, enableWebhookEndpoint, endpointJson, listWebhookDeliveries, redeliverWebhookEvent } from "../services/webhooks/endpoints.ts";
import { openSecret, sealSecret } from "../services/webhooks/secrets.ts";

/** A console session lasts 12 hours; a sign-in code printed by the sandbox banner, 24 hours and one use. */
const SESSION_MS = 12 * 3_600_000;
export const SIGNIN_CODE_MS = 24 * 3_600_000;
/**
 * A one-time view (a new token, an endpoint's secret) waits this long for its page: the browser follows the
 * form's redirect at once; an unopened view is of no use later and is pruned.
 */
export const ONE_TIME_VIEW_MS = 5 * 60_000;

export type ConsoleAppOptions = {
  /** The key webhook signing secrets are sealed with (deps.ts loadWebhookSecretKey); without it the console creates no endpoints. */
  webhookSecretKey?: () => Uint8Array;
  /** Sandbox: the demo x402 merchant's paid URL and price, for the overview's example. */
  x402Demo?: { paidUrl: string; priceMicros: number };
  /** Sandbox: mint test USDC to a project's deposit wallet (the watcher credits it as any deposit). */
  fundSandbox?: (projectId: string, amountMicros: bigint) => Promise<void>;
};

/** The MCP server's entry point in this checkout (packages/mcp/README.md, "From a checkout"). */
const MCP_BIN = resolve(import.meta.dirname, "../../../mcp/bin/agentwallet-mcp.js");

const EXPLORER_TX_URL: Record<number, string> = { 8453: "https://basescan.org/tx/", 84532: "https://sepolia.basescan.org/tx/" };

export function consoleBackend(ctx: HttpDeps, options: ConsoleAppOptions): ConsoleBackend {
  const sessions = ctx.ledger.consoleSessions;
  const now = () => ctx.clock().toISOString();
  const tokenActive = (t: { expires_at: string | null; revoked_at: string | null } | undefined) => !!t && !t.revoked_at && !(t.expires_at && t.expires_at <= now());
  const csrfOf = (sessionId: string) => hashToken(`console-csrf:${sessionId}`).slice(0, 43);
  // One-time views are sealed under a key of their own derived from the deployment's (the one webhook secrets
  // are sealed with), so any process of the deployment opens them; without it (a bare test app), a key of
  // this process's lifetime, so a view is shown only by the process that made it.
  const deploymentKey = options.webhookSecretKey ?? (ctx.webhookSecretKey ? () => ctx.webhookSecretKey! : undefined);
  let viewKey: Uint8Array | undefined;
  const viewKeyOf = () => (viewKey ??= deploymentKey ? createHmac("sha256", deploymentKey()).update("agentwallet console one-time view v1").digest() : randomBytes(32));

  const summary = (p: { id: string; name: string; plan: string; paused: number | boolean; created_at: string }) => ({
    id: p.id,
    name: p.name,
    plan: p.plan,
    paused: p.paused === 1 || p.paused === true,
    created_at: p.created_at,
  });

  /**
   * The server's rule for changes (tokens, approvals), whatever the console shows: the operator, or an active
   * token of this project that may manage it (mayManageProject), read again now. Returns who acts, as recorded.
   */
  const requireManage = async (viewer: Viewer, projectId: string, what: "manage" | "decide" = "manage"): Promise<string> => {
    // The admin API records the credential's id; the console names the credential its operator signed in with.
    if (viewer.kind === "operator") return `operator ${viewer.credentialId}`;
    const t = await ctx.ledger.tokens.get(viewer.tokenId);
    if (!t || !tokenActive(t) || t.project_id !== projectId || !mayManageProject(t)) {
      throw forbidden("permission_denied", "This token may not manage tokens or approvals: that needs the operator, or a token with read, pay and x402 and no spending controls of its own.");
    }
    if (what === "decide" && !mayDecideApprovals(t, (await ctx.ledger.projects.get(projectId))?.spending_controls ?? null)) {
      throw forbidden("permission_denied", "This project's own approval threshold is the operator's: only the operator approves or denies its payments.");
    }
    return `token ${t.id} (${t.display_prefix}…)`;
  };

  const tokenSummary = async (
    t: { id: string; project_id: string; display_prefix: string; permissions: string; created_at: string; expires_at: string | null; revoked_at: string | null; spending_controls: string | null },
    projectControls: string | null,
  ): Promise<TokenSummary> => {
    const controls = { token: parseControls(t.spending_controls), project: parseControls(projectControls) };
    const limits = await getLimits(ctx, { tokenId: t.id, projectId: t.project_id, controls });
    return {
      id: t.id,
      display_prefix: t.display_prefix,
      permissions: t.permissions.split(",") as Permission[],
      created_at: t.created_at,
      expires_at: t.expires_at,
      revoked_at: t.revoked_at,
      controls: limits.token,
      windows: limits.windows,
    };
  };

  const approvalItem = (p: PaymentRow, prefixes: Map<string, string>): ApprovalItem => ({
    id: p.id,
    rail: p.rail,
    amount_micros: Number(p.amount_micros),
    recipient: p.rail === "fiat" ? `${p.recipient} (bank account)` : p.recipient,
    description: p.description,
    token_id: p.token_id,
    token_prefix: p.token_id ? (prefixes.get(p.token_id) ?? null) : null,
    status: p.status,
    created_at: p.created_at,
    approval: p.approval as ApprovalItem["approval"],
    approval_until: p.approval_until,
    decided_by: p.approval_decided_by,
    decided_at: p.approval_decided_at,
    tx_hash: p.rail === "fiat" ? null : p.tx_hash,
  });

  return {
    async verifyToken(token) {
      if (!isWellFormedToken(token)) return null;
      const row = await ctx.ledger.tokens.findByHash(hashToken(token));
      if (!row || !tokenActive(row)) return null;
      return { tokenId: row.id, projectId: row.project_id };
    },
    async verifyAdminCredential(secret) {
      // The admin API's own check (services/adminCredentials.ts): an active aw_admin_… credential.
      const check = await checkAdminCredential(ctx, secret);
      return check.kind === "valid" ? check.credential.id : null;
    },
    async redeemSignInCode(code) {
      const token = await sessions.redeemCode(code, now());
      return token && tokenActive(token) ? { tokenId: token.id, projectId: token.project_id } : null;
    },
    async createSession(viewer) {
      const id = randomBytes(32).toString("base64url");
      const expiresAt = new Date(ctx.clock().getTime() + SESSION_MS).toISOString();
      await sessions.create(id, viewer.kind, viewer.kind === "token" ? viewer.tokenId : null, now(), expiresAt, viewer.kind === "operator" ? viewer.credentialId : null);
      return { id, csrf: csrfOf(id), expiresAt };
    },
    async getSession(id) {
      const row = await sessions.get(id, now());
      if (!row) return null;
      const base = { id, csrf: csrfOf(id), expiresAt: row.expires_at };
      // An operator's session lasts while its admin credential is active: revoking it ends the session.
      if (row.kind === "operator") return row.admin && !row.admin.revoked_at ? { ...base, viewer: { kind: "operator", credentialId: row.admin.id } } : null;
      if (!row.token || !row.token_id || !tokenActive(row.token)) return null;
      const t = row.token;
      const manage = mayManageProject(t);
      const decide = manage && mayDecideApprovals(t, (await ctx.ledger.projects.get(t.project_id))?.spending_controls ?? null);
      return { ...base, viewer: { kind: "token", projectId: t.project_id, tokenId: row.token_id, permissions: t.permissions.split(",") as Permission[], manage, decide } };
    },
    async deleteSession(id) {
      await sessions.delete(id);
    },
    async listProjects() {
      return (await ctx.ledger.projects.list()).map(summary);
    },
    async getProject(projectId) {
      const p = await ctx.ledger.projects.get(projectId);
      return p ? summary(p) : null;
    },
    async overview(projectId) {
      const b = await ctx.ledger.balances.get(projectId);
      const project = await ctx.ledger.projects.get(projectId);
      const available = Number(b?.available_micros ?? 0);
      const frozenAt = project?.wallet_frozen_at ?? null;
      // As GET /v1/balance shows it: a frozen wallet offers nothing (services/getBalance.ts).
      return {
        project_id: projectId,
        currency: "usdc" as const,
        available: frozenAt === null ? available : 0,
        pending: Number(b?.pending_micros ?? 0),
        held: Number(b?.held_micros ?? 0),
        total_funded: Number(b?.total_funded_micros ?? 0),
        total_spent: Number(b?.total_spent_micros ?? 0),
        wallet_address: project?.wallet_address ?? null,
        frozen: frozenAt !== null,
        frozen_amount: frozenAt === null ? 0 : available,
        frozen_since: frozenAt,
      };
    },
    depositAddress: (projectId) => getDepositAddress(ctx, projectId),
    async spendByDay(projectId, days) {
      const since = new Date(ctx.clock().getTime() - days * 86_400_000).toISOString().slice(0, 10);
      const rows = await ctx.ledger.balances.spendByDay(projectId, since);
      return rows.map((r) => ({
        day: r.day,
        rail: (r.type === "x402_payment" ? "x402" : r.type === "payment" ? "fiat" : "usdc_transfer") as DailySpend["rail"],
        amount_micros: r.currency === "usd" ? r.amount * 10_000 : r.amount,
      }));
    },
    async listTransactions(projectId, query) {
      // The API's own parsing and reads: the same filters, bounds and errors as GET /v1/transactions.
      const { startingAfter, ...q } = parseListQuery({
        limit: String(query.limit),
        ...(query.type ? { type: query.type.join(",") } : {}),
        ...(query.status ? { status: query.status.join(",") } : {}),
        ...(query.created_after ? { created_after: query.created_after } : {}),
        ...(query.created_before ? { created_before: query.created_before } : {}),
        ...(query.starting_after ? { starting_after: query.starting_after } : {}),
      });
      const cursor = startingAfter === undefined ? undefined : await ctx.ledger.transactions.cursorOf(projectId, startingAfter);
      if (startingAfter !== undefined && !cursor) throw badRequest("invalid_query", "That page's starting transaction is not in this project.");
      return listTransactions(ctx, projectId, { ...q, cursor });
    },
    async getTransaction(projectId, id) {
      try {
        return await getTransaction(ctx.ledger.transactions, projectId, id);
      } catch (err) {
        if (err instanceof DomainError && err.kind === "not_found") return null;
        throw err;
      }
    },
    async listTokens(projectId) {
      const project = await ctx.ledger.projects.get(projectId);
      return Promise.all((await ctx.ledger.tokens.list(projectId)).map((t) => tokenSummary(t, project?.spending_controls ?? null)));
    },
    async getToken(projectId, tokenId) {
      const t = await ctx.ledger.tokens.get(tokenId);
      if (!t || t.project_id !== projectId) return null;
      const project = await ctx.ledger.projects.get(projectId);
      return tokenSummary(t, project?.spending_controls ?? null);
    },
    async projectControls(projectId) {
      return renderControls(parseControls((await ctx.ledger.projects.get(projectId))?.spending_controls));
    },
    async createToken(viewer, projectId, input) {
      await requireManage(viewer, projectId);
      // The service the CLI and the admin API issue tokens with: the token and its controls written together.
      const issued = await issueToken(ctx, {
        projectId,
        permissions: input.permissions,
        mode: ctx.config.mode === "live" ? "live" : "test",
        ...(input.expiresInDays ? { expiresInMs: input.expiresInDays * 86_400_000 } : {}),
        controls: input.controls,
      });
      return { id: issued.id, token: issued.token, permissions: issued.permissions as Permission[], expires_at: issued.expires_at };
    },
    async updateTokenControls(viewer, projectId, tokenId, controls) {
      await requireManage(viewer, projectId);
      const t = await ctx.ledger.tokens.get(tokenId);
      if (!t || t.project_id !== projectId) return false;
      return updateTokenControls(ctx, tokenId, controls);
    },
    async revokeToken(viewer, projectId, tokenId) {
      await requireManage(viewer, projectId);
      const t = await ctx.ledger.tokens.get(tokenId);
      if (!t || t.project_id !== projectId || t.revoked_at) return false;
      await revokeToken(ctx, tokenId);
      return true;
    },
    async listApprovals(projectId) {
      const [awaiting, decided, tokens] = await Promise.all([
        ctx.ledger.listAwaitingApprovals({ projectId, limit: 100 }),
        ctx.ledger.listDecidedApprovals(projectId, 20),
        ctx.ledger.tokens.list(projectId),
      ]);
      const prefixes = new Map(tokens.map((t) => [t.id, t.display_prefix]));
      return { awaiting: awaiting.map((p) => approvalItem(p, prefixes)), decided: decided.map((p) => approvalItem(p, prefixes)) };
    },
    async getApproval(projectId, paymentId) {
      const p = await ctx.ledger.getPayment(paymentId);
      if (!p || p.project_id !== projectId || p.approval === null) return null;
      const t = p.token_id ? await ctx.ledger.tokens.get(p.token_id) : undefined;
      return approvalItem(p, new Map(t ? [[t.id, t.display_prefix]] : []));
    },
    async listRefusals(projectId, tokenId, limit) {
      const [rows, tokens] = await Promise.all([ctx.ledger.listRefusals({ projectId, ...(tokenId ? { tokenId } : {}), limit }), ctx.ledger.tokens.list(projectId)]);
      const prefixes = new Map(tokens.map((t) => [t.id, t.display_prefix]));
      return rows.map((r) => ({ at: r.created_at, token_prefix: r.token_id ? (prefixes.get(r.token_id) ?? null) : null, code: r.code, detail: r.detail, rail: r.rail, recipient: r.recipient, amount_micros: r.amount_micros === null ? null : Number(r.amount_micros) }));
    },
    async transactionHistory(projectId, transactionId) {
      const t = await ctx.ledger.transactions.history(projectId, transactionId);
      if (!t) return [];
      const [p, recorded] = await Promise.all([
        t.payment_id ? ctx.ledger.getPayment(t.payment_id) : undefined,
        ctx.ledger.transactions.statusHistory(projectId, t.payment_id ?? transactionId),
      ]);
      return recorded.length ? historyOfEvents(recorded, p) : historyOf(t, p);
    },
    async decideApproval(viewer, projectId, paymentId, decision) {
      const who = await requireManage(viewer, projectId, "decide");
      const p = await ctx.ledger.getPayment(paymentId);
      if (!p || p.project_id !== projectId) return { ok: false, detail: "There is no such payment in this project." };
      const out = await decidePayment(ctx, paymentId, decision, who);
      return out.kind === "decided" ? { ok: true } : { ok: false, detail: `This payment no longer waits for approval: ${out.detail}.` };
    },
    async keepOneTimeView(session, projectId, kind, shown) {
      const viewId = randomBytes(24).toString("base64url");
      const sealed = sealSecret(viewKeyOf(), `console-view:${kind}:${projectId}`, JSON.stringify(shown));
      await sessions.putView({ viewId, sessionId: session.id, projectId, kind, sealed, expiresAt: new Date(ctx.clock().getTime() + ONE_TIME_VIEW_MS).toISOString() });
      return viewId;
    },
    async takeOneTimeView(session, projectId, kind, viewId) {
      if (!/^[A-Za-z0-9_-]{1,100}$/.test(viewId)) return null;
      const sealed = await sessions.takeView({ viewId, sessionId: session.id, projectId, kind }, now());
      return sealed === undefined ? null : (JSON.parse(openSecret(viewKeyOf(), `console-view:${kind}:${projectId}`, sealed)) as Record<string, unknown>);
    },
    webhookEventTypes: WEBHOOK_EVENT_TYPES,
    async listWebhooks(projectId) {
      return (await ctx.ledger.webhooks.listEndpoints(projectId)).map(endpointJson);
    },
    async getWebhook(projectId, endpointId) {
      const e = await ctx.ledger.webhooks.getEndpoint(endpointId);
      if (!e || e.project_id !== projectId) return null;
      const deliveries = await listWebhookDeliveries(ctx.ledger, endpointId, 50);
      return { endpoint: endpointJson(e), deliveries: deliveries.map((d) => ({ ...d, endpoint_id: e.id, url: e.url }) as WebhookDelivery) };
    },
    async transactionDeliveries(projectId, transactionId) {
      return (await ctx.ledger.webhooks.listDeliveriesOf(projectId, transactionId, 50)) as WebhookDelivery[];
    },
    async createWebhook(viewer, projectId, input) {
      await requireManage(viewer, projectId);
      if (!options.webhookSecretKey) throw badRequest("webhook_url_invalid", "This server was started without the key webhook secrets are sealed with; create endpoints with `agentwallet webhooks create`.");
      const { endpoint, secret } = await createWebhookEndpoint(
        { ledger: ctx.ledger, clock: ctx.clock, newId: ctx.newId, mode: ctx.config.mode, secretKey: options.webhookSecretKey },
        { projectId, url: input.url, events: input.events },
      );
      return { endpoint: endpointJson(endpoint), secret };
    },
    async deleteWebhook(viewer, projectId, endpointId) {
      await requireManage(viewer, projectId);
      const e = await ctx.ledger.webhooks.getEndpoint(endpointId);
      if (!e || e.project_id !== projectId) return false;
      await deleteWebhookEndpoint(ctx, endpointId);
      return true;
    },
    async enableWebhook(viewer, projectId, endpointId) {
      await requireManage(viewer, projectId);
      const e = await ctx.ledger.webhooks.getEndpoint(endpointId);
      if (!e || e.project_id !== projectId) return false;
      await enableWebhookEndpoint(ctx, endpointId);
      return true;
    },
    async redeliverWebhook(viewer, projectId, eventId) {
      await requireManage(viewer, projectId);
      const event = await ctx.ledger.webhooks.getEvent(eventId);
      if (!event || event.project_id !== projectId) return null;
      return redeliverWebhookEvent(ctx, eventId);
    },
    ...(options.fundSandbox
      ? {
          async fundSandbox(projectId: string, amountUsdc: number) {
            await getDepositAddress(ctx, projectId);
            await options.fundSandbox!(projectId, BigInt(amountUsdc) * 1_000_000n);
          },
        }
      : {}),
  };
}

export function registerConsoleRoutes(app: FastifyInstance, ctx: HttpDeps, options: ConsoleAppOptions): void {
  registerConsole(app, {
    backend: consoleBackend(ctx, options),
    sandbox: ctx.config.mode === "sandbox",
    explorerTxUrl: ctx.config.mode === "live" ? (EXPLORER_TX_URL[ctx.config.chain.chainId] ?? null) : null,
    filters: true,
    mcpCommand: { command: "node", args: [MCP_BIN] },
    x402Example: options.x402Demo ?? null,
    refusalStatus: (err) => (err instanceof DomainError ? statusOf(err) : undefined),
  });
}

/**
 * A transaction's way to its status: the transitions its webhooks report, as the ledger's triggers recorded
 * them (`status_history`, decisions.md "Status history"), each with what the payment row says of it, and the
 * approval's decision, which changes no status, after the wait for it.
 */
export function historyOfEvents(events: { type: string; status: string; at: string }[], p: PaymentRow | undefined): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  for (const e of events) {
    // A deposit's events carry the deposit's own status (seen, credited); its transaction's is pending, then completed, as the event's body says.
    const status = e.type === "deposit.pending" ? "pending" : e.type === "deposit.credited" ? "completed" : e.status;
    const entry = (text: string) => out.push({ at: e.at, status, text });
    switch (e.type) {
      case "payment.created":
        entry(p ? `Created; ${usdOf(p.amount_micros + p.fee_micros)} held from the balance` : "Created");
        break;
      case "payment.approval_required":
        entry(`Waits for approval (above the token's threshold)${p?.approval_until ? ` until ${utc(p.approval_until)}` : ""}`);
        if (p?.approval === "expired") out.push({ at: p.approval_until ?? p.updated_at, status: e.status, text: "Approval time ran out" });
        else if (p && p.approval && p.approval !== "awaiting") out.push({ at: p.approval_decided_at ?? p.updated_at, status: e.status, text: `${p.approval === "approved" ? "Approved" : "Denied"}${p.approval_decided_by ? ` by ${p.approval_decided_by}` : ""}` });
        break;
      case "payment.processing":
        entry(p?.tx_hash && p.rail !== "fiat" ? `Sent on-chain: ${p.tx_hash}` : p?.rail === "fiat" ? "Processing: the bank payout is under way" : "Processing");
        break;
      case "payment.completed":
        entry("Completed");
        break;
      case "payment.failed":
      case "payment.reversed":
        entry(`${e.type === "payment.failed" ? "Failed" : "Reversed"}${p?.failure_code ? ` (${p.failure_code})` : ""}: ${p?.failure_reason ?? "no reason recorded"}`);
        break;
      case "deposit.pending":
        entry("Deposit seen on-chain; credited once confirmed");
        break;
      case "deposit.credited":
        entry("Deposit confirmed on-chain and credited");
        break;
      default:
        entry(e.type);
    }
  }
  return out;
}

/**
 * A transaction's way to its status for rows older than `status_history` (migration 0024), from what the
 * ledger records: its
 * creation, its payment's approval and who decided it, completion, or the last change with the failure.
 */
export function historyOf(
  t: { type: string; status: string; created_at: string; completed_at: string | null },
  p: PaymentRow | undefined,
): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  if (t.type === "usdc_fund") out.push({ at: t.created_at, status: t.status, text: "Deposit confirmed on-chain and credited" });
  else out.push({ at: t.created_at, status: "pending", text: p ? `Created; ${usdOf(p.amount_micros + p.fee_micros)} held from the balance` : "Created" });
  if (p?.approval) {
    out.push({ at: p.created_at, status: "pending", text: `Waits for approval (above the token's threshold) until ${utc(p.approval_until)}` });
    if (p.approval === "expired") out.push({ at: p.approval_until ?? p.updated_at, status: "pending", text: "Approval time ran out" });
    else if (p.approval !== "awaiting") out.push({ at: p.approval_decided_at ?? p.updated_at, status: "pending", text: `${p.approval === "approved" ? "Approved" : "Denied"}${p.approval_decided_by ? ` by ${p.approval_decided_by}` : ""}` });
  }
  if (p?.tx_hash && p.rail !== "fiat") out.push({ at: p.completed_at ?? p.updated_at, status: p.status, text: `Sent on-chain: ${p.tx_hash}` });
  if (t.status === "completed" && t.completed_at && t.type !== "usdc_fund") out.push({ at: t.completed_at, status: "completed", text: "Completed" });
  if ((t.status === "failed" || t.status === "reversed") && p) {
    out.push({ at: p.updated_at, status: t.status, text: `${t.status === "failed" ? "Failed" : "Reversed"}${p.failure_code ? ` (${p.failure_code})` : ""}: ${p.failure_reason ?? "no reason recorded"}` });
  }
  if ((t.status === "pending" || t.status === "processing") && p && p.updated_at > p.created_at) out.push({ at: p.updated_at, status: t.status, text: `${t.status === "processing" ? "Processing" : "Pending"} (last change)` });
  return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

const utc = (iso: string | null) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : "");
const usdOf = (micros: number) => `$${(Number(micros) / 1_000_000).toFixed(2)}`;

/** A one-time sign-in link's code for this token (the sandbox banner prints it). */
export async function createSignInCode(ctx: HttpDeps, tokenId: string): Promise<string> {
  const code = randomBytes(24).toString("base64url");
  await ctx.ledger.consoleSessions.createCode(code, tokenId, new Date(ctx.clock().getTime() + SIGNIN_CODE_MS).toISOString());
  return code;
}
