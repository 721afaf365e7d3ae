/**
 * Child tokens, `/v1/tokens`: a project token with `delegate` creates, lists, reads the limits of and
 * revokes its own descendants (services/delegation.ts). The admin API's `/v1/admin/…/tokens` stay the
 * operator's; these routes never reach a token outside the caller's branch.
 */
import { CreateChildTokenRequest } from "@agentwallet/api";
import type { FastifyInstance } from "fastify";
import { principalOf, tokenAuth } from "./auth.ts";
import { parseOr400 } from "./validation.ts";
import { createChildToken, getChildTokenLimits, listChildTokens, revokeChildToken } from "../services/delegation.ts";

type WithId = { Params: { id: string } };
/** The application's context, as these routes take it (declared through their consumers, not context.ts). */
type TokenRoutesContext = Parameters<typeof tokenAuth>[0] & Parameters<typeof createChildToken>[0];

export function registerTokenRoutes(app: FastifyInstance, ctx: TokenRoutesContext): void {
  const asDelegate = { preHandler: tokenAuth(ctx, "delegate") };
  app.post("/v1/tokens", asDelegate, async (req, reply) => {
    const body = parseOr400(CreateChildTokenRequest, req.body);
    return reply.code(201).send(await createChildToken(ctx, principalOf(req), body, req.ip));
  });
  app.get("/v1/tokens", asDelegate, async (req) => listChildTokens(ctx, principalOf(req)));
  app.delete<WithId>("/v1/tokens/:id", asDelegate, async (req) => revokeChildToken(ctx, principalOf(req), req.params.id, req.ip));
  app.get<WithId>("/v1/tokens/:id/limits", asDelegate, async (req) => getChildTokenLimits(ctx, principalOf(req), req.params.id));
}
