/**
 * The web console, a Fastify plugin the API server registers at /console. Pages are rendered on the server
 * from the service's own functions (the `ConsoleBackend` port), so the browser never holds a token: signing in
 * exchanges a token or the admin key for a session cookie (`HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS,
 * path /console). Every state-changing request is a POST carrying the session's CSRF token (a hidden field, or
 * the `x-csrf-token` header from the page's script) and, when the browser sends one, a same-origin `Origin`.
 */
import type { FastifyInstance } from "fastify";
import { CSS, JS } from "./assets.ts";
import { registerAgents } from "./routes/agents.ts";
import { registerApprovals } from "./routes/approvals.ts";
import { registerAudit } from "./routes/audit.ts";
import { type ConsoleOptions, guardRequests, routeKit } from "./routes/kit.ts";
import { registerOverview } from "./routes/overview.ts";
import { registerProjects } from "./routes/projects.ts";
import { registerSignIn } from "./routes/signIn.ts";
import { registerSpend } from "./routes/spend.ts";
import { registerTransactions } from "./routes/transactions.ts";
import { registerWebhooks } from "./routes/webhooks.ts";

export type { ApprovalItem, AuditItem, BurnWindow, Rail, SpendLine, SpendPeriod, SpendReport, OperatorRole, ConsoleBackend, Controls, DailySpend, HistoryEntry, RefusalItem, RefusalLimit, WebhookDelivery, WebhookEndpoint, LimitWindow, NewToken, OneTimeViewKind, Overview, ProjectSummary, Session, TokenSummary, TransactionQuery, Viewer, ListFilters, ListedTransaction, ListPage, Counterparty, AgentName } from "./backend.ts";
export type { ConsoleOptions } from "./routes/kit.ts";

/** The console's routes, one module per page (routes/), over the helpers they share (routes/kit.ts). */
export function registerConsole(app: FastifyInstance, opts: ConsoleOptions): void {
  void app.register(async (c) => {
    const kit = routeKit(opts);
    guardRequests(c, kit);
    c.get("/console/assets/console.css", async (_req, reply) => reply.type("text/css; charset=utf-8").send(CSS));
    c.get("/console/assets/console.js", async (_req, reply) => reply.type("text/javascript; charset=utf-8").send(JS));
    registerSignIn(c, kit);
    registerProjects(c, kit);
    registerOverview(c, kit);
    registerTransactions(c, kit);
    registerSpend(c, kit);
    registerApprovals(c, kit);
    registerAgents(c, kit);
    registerWebhooks(c, kit);
    registerAudit(c, kit);
  });
}
