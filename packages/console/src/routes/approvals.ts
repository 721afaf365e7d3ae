/** Payments that wait for a person: the list, and approve or deny (the operator, or a token that may decide). */
import type { FastifyInstance } from "fastify";
import { approvalsPage, canDecide, confirmDecisionPage } from "../pages.ts";
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

  // Asking to approve or deny shows what is decided and takes an optional reason; only its POST decides.
  c.get<{ Params: { pid: string; id: string; decision: string } }>("/console/p/:pid/approvals/:id/:decision", async (req, reply) => {
    const verb = req.params.decision === "approve" || req.params.decision === "deny" ? req.params.decision : null;
    if (!verb) throw new ConsoleError(404, "No such action.");
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const pc = pageContext(s, { project, current: "approvals" });
    if (!canDecide(pc)) throw new ConsoleError(403, "This sign-in may see approvals but not decide them.");
    const a = await backend.getApproval(project.id, req.params.id);
    if (!a) throw new ConsoleError(404, "There is no such payment waiting in this project.");
    if (a.approval !== "awaiting") return send(reply, approvalsPage(pc, await backend.listApprovals(project.id), { text: "This payment no longer waits for approval.", error: true }), 409);
    return send(reply, confirmDecisionPage(pc, a, verb));
  });

  c.post<{ Params: { pid: string; id: string; decision: string } }>("/console/p/:pid/approvals/:id/:decision", async (req, reply) => {
    const decision = req.params.decision === "approve" ? "approved" : req.params.decision === "deny" ? "denied" : null;
    if (!decision) throw new ConsoleError(404, "No such action.");
    const m = await managedPost(req, reply, "approvals", "decide");
    if (!m) return reply;
    const reason = (m.body as Record<string, string | undefined>).reason?.trim() || null;
    if (reason && reason.length > 500) throw new ConsoleError(400, "The reason is at most 500 characters.");
    const out = await backend.decideApproval(m.s.viewer, m.project.id, req.params.id, decision, reason);
    if (!out.ok) return send(reply, approvalsPage(m.pc, await backend.listApprovals(m.project.id), { text: out.detail, error: true }), 409);
    return reply.redirect(`/console/p/${m.project.id}/approvals?decided=${decision}`, 303);
  });
}
