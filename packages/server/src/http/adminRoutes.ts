/**
 * The admin API, `/v1/admin/…`: what an operator's tools do with the CLI's own service functions
 * (services/projects.ts, tokens.ts, spendingControls.ts, approvals.ts), so both apply one set of rules.
 * Authenticated by an admin credential only (auth.ts `adminAuth`, each route's preHandler); a project token is refused here.
 */
import { AdminPendingQuery, AdminRefusalsQuery, AuditQuery, CreateProjectRequest, CreateTokenRequest, DecisionRequest, SpendingControlsInput } from "@agentwallet/api";
import type { FastifyInstance } from "fastify";
import { adminActor, adminAuth, adminOf } from "./auth.ts";
import { listAudit } from "../services/audit.ts";
import { parseOr400 } from "./validation.ts";
import { conflict, notFound } from "../domain/errors.ts";
import { createProject, getProject, listProjects, setProjectPaused } from "../services/projects.ts";
import { getToken, issueToken, listTokens, revokeToken } from "../services/tokens.ts";
import { getTokenLimits, listRefusals, updateControls } from "../services/spendingControls.ts";
import { decidePayment, decisionJson, listPendingApprovals } from "../services/approvals.ts";

type WithId = { Params: { id: string } };
/** The application's context, as authentication takes it (declared through its consumer, not context.ts). */
type AdminRoutesContext = Parameters<typeof adminAuth>[0];

export function registerAdminRoutes(app: FastifyInstance, ctx: AdminRoutesContext): void {
  // Reads take any role; decisions an approver; every other change an admin (domain/audit.ts).
  const asAdmin = { preHandler: adminAuth(ctx) };
  const asViewer = { preHandler: adminAuth(ctx, "viewer") };
  const asApprover = { preHandler: adminAuth(ctx, "approver") };
  app.get("/v1/admin/projects", asViewer, async (req, reply) => {
    return { data: await listProjects(ctx) };
  });
  app.post("/v1/admin/projects", asAdmin, async (req, reply) => {
    const body = parseOr400(CreateProjectRequest, req.body);
    return reply.code(201).send(await createProject(ctx, body));
  });
  app.get<WithId>("/v1/admin/projects/:id", asViewer, async (req, reply) => {
    return getProject(ctx, req.params.id);
  });
  app.post<WithId>("/v1/admin/projects/:id/pause", asAdmin, async (req, reply) => {
    return setProjectPaused(ctx, req.params.id, true, adminActor(req));
  });
  app.post<WithId>("/v1/admin/projects/:id/resume", asAdmin, async (req, reply) => {
    return setProjectPaused(ctx, req.params.id, false, adminActor(req));
  });
  app.patch<WithId>("/v1/admin/projects/:id/controls", asAdmin, async (req, reply) => {
    await updateControls(ctx, "project", req.params.id, parseOr400(SpendingControlsInput, req.body), adminActor(req));
    return getProject(ctx, req.params.id);
  });

  app.get<WithId>("/v1/admin/projects/:id/tokens", asViewer, async (req, reply) => {
    return { data: await listTokens(ctx, req.params.id) };
  });
  app.post<WithId>("/v1/admin/projects/:id/tokens", asAdmin, async (req, reply) => {
    const body = parseOr400(CreateTokenRequest, req.body);
    const created = await issueToken(ctx, {
      projectId: req.params.id,
      permissions: [...new Set(body.permissions)],
      mode: ctx.config.mode === "live" ? "live" : "test",
      expiresInMs: body.expires_in_seconds === undefined ? undefined : body.expires_in_seconds * 1000,
      controls: body.spending_controls,
      name: body.name ?? null,
    }, adminActor(req));
    return reply.code(201).send(created);
  });
  app.patch<WithId>("/v1/admin/tokens/:id/controls", asAdmin, async (req, reply) => {
    await updateControls(ctx, "token", req.params.id, parseOr400(SpendingControlsInput, req.body), adminActor(req));
    return getToken(ctx, req.params.id);
  });
  app.post<WithId>("/v1/admin/tokens/:id/revoke", asAdmin, async (req, reply) => {
    return revokeToken(ctx, req.params.id, adminActor(req));
  });
  app.get<WithId>("/v1/admin/tokens/:id/limits", asViewer, async (req, reply) => {
    return getTokenLimits(ctx, req.params.id);
  });

  app.get("/v1/admin/payments/pending", asViewer, async (req, reply) => {
    const q = parseOr400(AdminPendingQuery, req.query ?? {}, "query");
    return { data: await listPendingApprovals(ctx, { projectId: q.project_id, limit: q.limit }) };
  });
  for (const [verb, decision] of [["approve", "approved"], ["deny", "denied"]] as const) {
    app.post<WithId>(`/v1/admin/payments/:id/${verb}`, asApprover, async (req, reply) => {
      const { reason } = parseOr400(DecisionRequest, req.body ?? {});
      const out = await decidePayment(ctx, req.params.id, decision, adminOf(req).id, { actor: adminActor(req), reason: reason ?? null });
      if (out.kind === "not_awaiting") {
        const id = req.params.id.slice(0, 80);
        throw out.found
          ? conflict("not_awaiting_approval", `Payment ${id} is not waiting for approval: ${out.detail}. Nothing changed.`)
          : notFound("payment_not_found", `There is no payment ${id}. GET /v1/admin/payments/pending lists those waiting.`);
      }
      return decisionJson(out.payment, decision);
    });
  }
  app.get("/v1/admin/audit", asViewer, async (req, reply) => {
    const q = parseOr400(AuditQuery, req.query ?? {}, "query");
    return listAudit(ctx, { projectId: q.project_id, action: q.action, before: q.before, limit: q.limit });
  });
  app.get("/v1/admin/refusals", asViewer, async (req, reply) => {
    const q = parseOr400(AdminRefusalsQuery, req.query ?? {}, "query");
    return { data: await listRefusals(ctx, { projectId: q.project_id, limit: q.limit }) };
  });
}
