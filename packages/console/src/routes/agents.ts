/** A project's API tokens (the agents): the tree of tokens and the child tokens they created, a new token (shown once with its MCP configuration), a token with its controls and refusals, changing its controls, revoking it (asked first). */
import type { FastifyInstance } from "fastify";
import type { NewToken } from "../backend.ts";
import { agentsPage, confirmRevokePage } from "../agentTree.ts";
import { controlsFormValues, mcpSnippet, newTokenPage, tokenCreatedPage, tokenPage } from "../pages.ts";
import { changedControlsFromForm, controlsFromForm } from "./controlsForm.ts";
import { ConsoleError, type Kit, one } from "./kit.ts";

export function registerAgents(c: FastifyInstance, k: Kit): void {
  const { opts, backend, pageContext, send, requireSession, projectFor, correctable, requireManage, managedPost, oneTimeView } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/agents", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const revoked = one((req.query as Record<string, unknown>).revoked) === "1";
    const [tokens, controls] = await Promise.all([backend.listTokens(project.id), backend.projectControls(project.id)]);
    return send(reply, agentsPage(pageContext(s, { project, current: "agents" }), tokens, controls, revoked ? "Token revoked: requests with it, and with every token below it, are refused from now on." : undefined));
  });

  c.get<{ Params: { pid: string } }>("/console/p/:pid/agents/new", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const pc = pageContext(s, { project, current: "agents" });
    requireManage(pc);
    return send(reply, newTokenPage(pc, { ...controlsFormValues(null), perm_read: "on" }));
  });

  c.post<{ Params: { pid: string } }>("/console/p/:pid/agents", async (req, reply) => {
    const m = await managedPost(req, reply, "agents");
    if (!m) return reply;
    const { s, project, pc, body } = m;
    try {
      const permissions = (["read", "pay", "x402"] as const).filter((p) => body[`perm_${p}`] !== undefined);
      if (permissions.length === 0) throw new ConsoleError(400, "Tick at least one permission.");
      const days = body.expires_in_days ? Number(body.expires_in_days) : null;
      if (days !== null && !(Number.isInteger(days) && days > 0 && days <= 3650)) throw new ConsoleError(400, "Expiry must be a number of days from 1 to 3650.");
      const controls = controlsFromForm(body);
      const created = await backend.createToken(s.viewer, project.id, { permissions: [...permissions], expiresInDays: days, controls });
      const baseUrl = `${req.protocol}://${req.headers.host ?? "127.0.0.1"}`;
      // Post, redirect, get: the page with the token is a GET shown once, so a reload creates nothing.
      const view = await backend.keepOneTimeView(s, project.id, "token", { token: created, snippet: mcpSnippet(created, baseUrl, opts.mcpCommand, controls) });
      return reply.redirect(`/console/p/${project.id}/agents/created/${view}`, 303);
    } catch (err) {
      const message = correctable(err);
      if (message === null) throw err;
      return send(reply, newTokenPage(pc, body, message), 400);
    }
  });

  c.get<{ Params: { pid: string; vid: string } }>("/console/p/:pid/agents/created/:vid", async (req, reply) => {
    const v = await oneTimeView(req, reply, "token");
    if (!v) return reply;
    const shown = v.shown as { token: NewToken; snippet: string };
    return send(reply, tokenCreatedPage(v.pc, shown.token, shown.snippet));
  });

  const tokenOf = async (projectId: string, tokenId: string) => {
    const t = await backend.getToken(projectId, tokenId);
    if (!t) throw new ConsoleError(404, "No such token in this project.");
    return t;
  };

  c.get<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const t = await tokenOf(project.id, req.params.tid);
    const saved = one((req.query as Record<string, unknown>).saved) === "1";
    return send(reply, tokenPage(pageContext(s, { project, current: "agents" }), t, controlsFormValues(t.controls), await backend.listRefusals(project.id, t.id, 20), { saved }));
  });

  c.post<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid/controls", async (req, reply) => {
    const m = await managedPost(req, reply, "agents");
    if (!m) return reply;
    const { s, project, pc, body } = m;
    try {
      if (!(await backend.updateTokenControls(s.viewer, project.id, req.params.tid, changedControlsFromForm(body)))) throw new ConsoleError(404, "No such token in this project.");
    } catch (err) {
      const message = correctable(err);
      if (message === null) throw err;
      return send(reply, tokenPage(pc, await tokenOf(project.id, req.params.tid), body, await backend.listRefusals(project.id, req.params.tid, 20), { error: message }), 400);
    }
    return reply.redirect(`/console/p/${project.id}/agents/${encodeURIComponent(req.params.tid)}?saved=1`, 303);
  });

  // The tree's revoke button asks first, naming the tokens below that go with it.
  c.get<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid/revoke", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const pc = pageContext(s, { project, current: "agents" });
    requireManage(pc);
    const t = await tokenOf(project.id, req.params.tid);
    return send(reply, confirmRevokePage(pc, t, await backend.listTokens(project.id)));
  });

  c.post<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid/revoke", async (req, reply) => {
    const m = await managedPost(req, reply, "agents");
    if (!m) return reply;
    const { s, project } = m;
    if (!(await backend.revokeToken(s.viewer, project.id, req.params.tid))) throw new ConsoleError(404, "No such active token in this project.");
    // Revoking the token this session signed in with ends the session: the next page asks to sign in.
    return reply.redirect(`/console/p/${project.id}/agents?revoked=1`, 303);
  });
}
