/**
 * The web console (`@agentwallet/console`) registered at /console: its options, and its port, `ConsoleBackend`,
 * answered method by method by the console's use cases (services/console/), which reuse the API's, the CLI's
 * and the admin API's own service functions: the same token rules, permissions, shapes and errors.
 */
import { resolve } from "node:path";
import { type ConsoleBackend, type TransactionQuery, registerConsole } from "@agentwallet/console";
import type { FastifyInstance } from "fastify";
import type { HttpDeps } from "./httpDeps.ts";
import { DomainError } from "../domain/errors.ts";
import { parseListQuery } from "./listQuery.ts";
import { statusOf } from "./errorStatus.ts";
import { getDepositAddress } from "../services/getDepositAddress.ts";
import * as approvals from "../services/console/approvals.ts";
import * as overview from "../services/console/overview.ts";
import * as projects from "../services/console/projects.ts";
import * as sessions from "../services/console/sessions.ts";
import * as signIn from "../services/console/signIn.ts";
import * as spend from "../services/console/spend.ts";
import * as tokens from "../services/console/tokens.ts";
import * as transactions from "../services/console/transactions.ts";
import * as transactionList from "../services/console/transactionList.ts";
import * as views from "../services/console/oneTimeViews.ts";
import * as webhooks from "../services/console/webhooks.ts";
import { listAudit } from "../services/audit.ts";

export type ConsoleAppOptions = {
  /** The key webhook signing secrets are sealed with (masterKeys.ts loadWebhookSecretKey); without it the console creates no endpoints. */
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
  const viewKey = views.oneTimeViewKey(ctx, options.webhookSecretKey);
  const fund = options.fundSandbox;
  return {
    verifyToken: (token) => signIn.verifyToken(ctx, token),
    verifyAdminCredential: (secret) => signIn.verifyAdminCredential(ctx, secret),
    redeemSignInCode: (code) => signIn.redeemSignInCode(ctx, code),
    createSession: (viewer) => sessions.createSession(ctx, viewer),
    getSession: (id) => sessions.getSession(ctx, id),
    deleteSession: (id) => sessions.deleteSession(ctx, id),
    listProjects: () => projects.listProjects(ctx),
    getProject: (projectId) => projects.getProject(ctx, projectId),
    overview: (projectId) => overview.overview(ctx, projectId),
    depositAddress: (projectId) => getDepositAddress(ctx, projectId),
    spendByDay: (projectId, days) => overview.spendByDay(ctx, projectId, days),
    spendReport: (projectId, period) => spend.spendReport(ctx, projectId, period),
    // The API's own query parser: the same filters, bounds and errors as GET /v1/transactions.
    listTransactions: async (projectId, query) => transactions.listTransactions(ctx, projectId, parseListQuery(apiQueryOf(query))),
    getTransaction: (projectId, id) => transactions.getTransaction(ctx, projectId, id),
    listPage: (projectId, filters, page) => transactionList.listPage(ctx, projectId, filters, page),
    exportPages: (projectId, filters) => transactionList.exportPages(ctx, projectId, filters),
    listedTransaction: (projectId, id) => transactionList.listedTransaction(ctx, projectId, id),
    agentNames: (projectId) => transactionList.agentNames(ctx, projectId),
    transactionHistory: (projectId, transactionId) => transactions.transactionHistory(ctx, projectId, transactionId),
    listTokens: (projectId) => tokens.listTokens(ctx, projectId),
    getToken: (projectId, tokenId) => tokens.getToken(ctx, projectId, tokenId),
    projectControls: (projectId) => tokens.projectControls(ctx, projectId),
    createToken: (viewer, projectId, input) => tokens.createToken(ctx, viewer, projectId, input),
    updateTokenControls: (viewer, projectId, tokenId, controls) => tokens.updateTokenControls(ctx, viewer, projectId, tokenId, controls),
    revokeToken: (viewer, projectId, tokenId) => tokens.revokeToken(ctx, viewer, projectId, tokenId),
    listApprovals: (projectId) => approvals.listApprovals(ctx, projectId),
    getApproval: (projectId, paymentId) => approvals.getApproval(ctx, projectId, paymentId),
    decideApproval: (viewer, projectId, paymentId, decision, reason) => approvals.decideApproval(ctx, viewer, projectId, paymentId, decision, reason),
    listAudit: async (projectId, before, limit) => {
      const page = await listAudit(ctx, { projectId: projectId ?? undefined, before: before ?? undefined, limit });
      return { entries: page.data, nextBefore: page.next_before };
    },
    listRefusals: (projectId, tokenId, limit) => approvals.listRefusals(ctx, projectId, tokenId, limit),
    keepOneTimeView: (session, projectId, kind, shown) => views.keepOneTimeView(ctx, viewKey, session, projectId, kind, shown),
    takeOneTimeView: (session, projectId, kind, viewId) => views.takeOneTimeView(ctx, viewKey, session, projectId, kind, viewId),
    webhookEventTypes: webhooks.webhookEventTypes,
    listWebhooks: (projectId) => webhooks.listWebhooks(ctx, projectId),
    getWebhook: (projectId, endpointId) => webhooks.getWebhook(ctx, projectId, endpointId),
    transactionDeliveries: (projectId, transactionId) => webhooks.transactionDeliveries(ctx, projectId, transactionId),
    createWebhook: (viewer, projectId, input) => webhooks.createWebhook(ctx, options.webhookSecretKey, viewer, projectId, input),
    deleteWebhook: (viewer, projectId, endpointId) => webhooks.deleteWebhook(ctx, viewer, projectId, endpointId),
    enableWebhook: (viewer, projectId, endpointId) => webhooks.enableWebhook(ctx, viewer, projectId, endpointId),
    redeliverWebhook: (viewer, projectId, eventId) => webhooks.redeliverWebhook(ctx, viewer, projectId, eventId),
    ...(fund ? { fundSandbox: (projectId: string, amountUsdc: number) => overview.fundSandbox(ctx, fund, projectId, amountUsdc) } : {}),
  };
}

/** The console's query as the API's query string has it, for the API's parser. */
function apiQueryOf(query: TransactionQuery): Record<string, string> {
  return {
    limit: String(query.limit),
    ...(query.type ? { type: query.type.join(",") } : {}),
    ...(query.status ? { status: query.status.join(",") } : {}),
    ...(query.created_after ? { created_after: query.created_after } : {}),
    ...(query.created_before ? { created_before: query.created_before } : {}),
    ...(query.starting_after ? { starting_after: query.starting_after } : {}),
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
    busy: (err) => ctx.ledger.overloadOf(err) !== undefined,
  });
}
