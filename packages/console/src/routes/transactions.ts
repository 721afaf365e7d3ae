/** A project's transactions: the list with the API's filters and cursor, and one transaction with its status history, approval and webhook deliveries. */
import type { FastifyInstance } from "fastify";
import type { TransactionQuery } from "../backend.ts";
import { STATUSES, TYPES, transactionPage, transactionsPage } from "../pages.ts";
import { ConsoleError, type Kit, many, one } from "./kit.ts";

const PAGE_SIZE = 50;

export function registerTransactions(c: FastifyInstance, k: Kit): void {
  const { opts, backend, pageContext, send, requireSession, projectFor } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/transactions", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const raw = req.query as Record<string, unknown>;
    const q: TransactionQuery = { limit: PAGE_SIZE };
    if (opts.filters) {
      q.type = many(raw.type)?.filter((t) => (TYPES as readonly string[]).includes(t));
      q.status = many(raw.status)?.filter((t) => (STATUSES as readonly string[]).includes(t));
      q.created_after = one(raw.created_after);
      q.created_before = one(raw.created_before);
      q.starting_after = one(raw.starting_after);
    }
    const list = await backend.listTransactions(project.id, q);
    return send(reply, transactionsPage(pageContext(s, { project, current: "transactions" }), q, list, opts.filters));
  });

  c.get<{ Params: { pid: string; id: string } }>("/console/p/:pid/transactions/:id", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const t = await backend.getTransaction(project.id, req.params.id);
    if (!t) throw new ConsoleError(404, "No such transaction in this project.");
    const [history, approval, deliveries] = await Promise.all([backend.transactionHistory(project.id, t.id), backend.getApproval(project.id, t.id), backend.transactionDeliveries(project.id, t.id)]);
    const redelivered = one((req.query as Record<string, unknown>).redelivered);
    return send(reply, transactionPage(pageContext(s, { project, current: "transactions" }), t as never, history, approval, deliveries, redelivered ? `Sent again: ${redelivered} delivery(ies) scheduled now.` : undefined));
  });
}
