/** Payments that wait for a person: the list, and approve or deny (the operator, or a token that may decide). */
import type { FastifyInstance } from "fastify";
import { approvalsPage, canDecide } from "../pages.ts";
import { ConsoleError, type Kit, one } from "./kit.ts";

export function registerApprovals(c: FastifyInstance, k: Kit): void {
  const { backend, pageContext, send, requireSession, projectFor, managedPost } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/approvals", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const done = one((req.query as Record<string, unknown>).decided);
    const notice = done === "approved" ? { text: "Approved: the payment is being sent." } : done === "denied" ? { text: "Denied: the payment failed and was credited back." } : undefined;
    return send(reply, approvalsPage(pageContext(s, { project, current: "approvals" }), await backend.listApprovals(project.id), notice));
  });

  c.post<{ Params: { pid: string; id: string; decision: string } }>("/console/p/:pid/approvals/:id/:decision", async (req, reply) => {
    const decision = req.params.decision === "approve" ? "approved" : req.params.decision === "deny" ? "denied" : null;
    if (!decision) throw new ConsoleError(404, "No such action.");
    const m = await managedPost(req, reply, "approvals");
    if (!m) return reply;
    if (!canDecide(m.pc)) throw new ConsoleError(403, "This project's own approval threshold is the operator's: only the operator approves or denies its payments.");
    const out = await backend.decideApproval(m.s.viewer, m.project.id, req.params.id, decision);
    if (!out.ok) return send(reply, approvalsPage(m.pc, await backend.listApprovals(m.project.id), { text: out.detail, error: true }), 409);
    return reply.redirect(`/console/p/${m.project.id}/approvals?decided=${decision}`, 303);
  });
}
