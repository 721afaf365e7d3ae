/** The audit log: a project's entries (operators, and tokens that may manage it), and every entry (operators). */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { auditPage } from "../auditPage.ts";
import { canSeeAudit } from "../pages.ts";
import { ConsoleError, type Kit, one } from "./kit.ts";

/** Entries per page. */
const AUDIT_PAGE_SIZE = 50;

function beforeOf(req: FastifyRequest): number | null {
  const b = one((req.query as Record<string, unknown>).before);
  if (b === undefined) return null;
  if (!/^\d{1,15}$/.test(b)) throw new ConsoleError(400, "The page cursor is not a number.");
  return Number(b);
}

export function registerAudit(c: FastifyInstance, k: Kit): void {
  const { backend, pageContext, send, requireSession, projectFor } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/audit", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const pc = pageContext(s, { project, current: "audit" });
    if (!canSeeAudit(pc)) throw new ConsoleError(403, "The audit log is for operators and tokens that may manage the project.");
    return send(reply, auditPage(pc, await backend.listAudit(project.id, beforeOf(req), AUDIT_PAGE_SIZE), `/console/p/${project.id}/audit`));
  });

  c.get("/console/audit", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    if (s.viewer.kind !== "operator") throw new ConsoleError(404, "No such page.");
    return send(reply, auditPage(pageContext(s, { current: "audit" }), await backend.listAudit(null, beforeOf(req), AUDIT_PAGE_SIZE), "/console/audit"));
  });
}
