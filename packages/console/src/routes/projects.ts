/** The operator's list of projects; a token's viewer goes to its own project. */
import type { FastifyInstance } from "fastify";
import { projectsPage } from "../pages.ts";
import type { Kit } from "./kit.ts";

export function registerProjects(c: FastifyInstance, k: Kit): void {
  const { backend, pageContext, send, requireSession } = k;
  c.get("/console/projects", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    if (s.viewer.kind !== "operator") return reply.redirect(`/console/p/${s.viewer.projectId}`, 303);
    return send(reply, projectsPage(pageContext(s, { current: "projects" }), await backend.listProjects()));
  });
}
