/**
 * A project's transactions: the list (a payment with its fee, agent and counterparty; filters beside the API's;
 * keyset pages with their place), its CSV export, streamed, and one transaction with its status history,
 * approval and webhook deliveries.
 */
import { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { ListFilters, Rail } from "../backend.ts";
import { csvHeader, csvRow } from "../csv.ts";
import { transactionPage, transactionsPage } from "../transactionsPage.ts";
import { ConsoleError, type Kit, many, one } from "./kit.ts";

const PAGE_SIZE = 50;

/** The list's filters from a query string (the server checks their values: 400 `invalid_query`). */
function filtersOf(raw: Record<string, unknown>): ListFilters {
  const f: ListFilters = {
    type: many(raw.type),
    status: many(raw.status),
    rail: many(raw.rail) as Rail[] | undefined,
    agent: one(raw.agent),
    counterparty: one(raw.counterparty),
    min_usd: one(raw.min_usd),
    max_usd: one(raw.max_usd),
    created_after: one(raw.created_after),
    created_before: one(raw.created_before),
  };
  if (f.agent && one(raw.sub_agents)) f.sub_agents = true;
  return f;
}

export function registerTransactions(c: FastifyInstance, k: Kit): void {
  const { opts, backend, pageContext, send, requireSession, projectFor } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/transactions", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const raw = req.query as Record<string, unknown>;
    const filters = opts.filters ? filtersOf(raw) : {};
    const page = { limit: PAGE_SIZE, ...(opts.filters ? { starting_after: one(raw.starting_after), ending_before: one(raw.ending_before) } : {}) };
    const [list, agents] = await Promise.all([backend.listPage(project.id, filters, page), backend.agentNames(project.id)]);
    return send(reply, transactionsPage(pageContext(s, { project, current: "transactions" }), filters, list, agents, opts.filters));
  });

  // The filtered list as CSV, written page by page as it is read: the whole list is never in memory.
  c.get<{ Params: { pid: string } }>("/console/p/:pid/transactions.csv", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const filters = opts.filters ? filtersOf(req.query as Record<string, unknown>) : {};
    const pages = backend.exportPages(project.id, filters)[Symbol.asyncIterator]();
    // The first page is read before the answer starts, so a bad filter is still a 400 page.
    const first = await pages.next();
    async function* lines(): AsyncGenerator<string> {
      yield csvHeader();
      for (let r = first; !r.done; r = await pages.next()) yield r.value.map(csvRow).join("");
    }
    const day = new Date().toISOString().slice(0, 10);
    return reply
      .type("text/csv; charset=utf-8")
      .header("content-disposition", `attachment; filename="transactions-${project.id}-${day}.csv"`)
      .header("cache-control", "no-store")
      .send(Readable.from(lines()));
  });

  c.get<{ Params: { pid: string; id: string } }>("/console/p/:pid/transactions/:id", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const t = await backend.getTransaction(project.id, req.params.id);
    if (!t) throw new ConsoleError(404, "No such transaction in this project.");
    // A fee's page names its payment's agent and counterparty.
    const listedId = t.type === "platform_fee" && typeof (t as Record<string, unknown>).payment_id === "string" ? String((t as Record<string, unknown>).payment_id) : t.id;
    const [history, approval, deliveries, listed] = await Promise.all([
      backend.transactionHistory(project.id, t.id),
      backend.getApproval(project.id, t.id),
      backend.transactionDeliveries(project.id, t.id),
      backend.listedTransaction(project.id, listedId),
    ]);
    const redelivered = one((req.query as Record<string, unknown>).redelivered);
    return send(reply, transactionPage(pageContext(s, { project, current: "transactions" }), t as never, listed, history, approval, deliveries, redelivered ? `Sent again: ${redelivered} delivery(ies) scheduled now.` : undefined));
  });
}
