/**
 * Bearer-token authentication, declared per route as its preHandler (`tokenAuth(ctx, "read")`,
 * `adminAuth(ctx)`, each built once): it runs after the body is parsed and before the handler, so a
 * malformed body is still refused before authentication and authentication before validation. Every
 * request looks the token up by its SHA-256, with its ancestors in the same statement (so revocation and expiry,
 * its own or an ancestor's, take effect on the next request);
 * a malformed token is refused without a lookup. The token text is never logged: only its id reaches
 * the request log.
 */
import type { Permission } from "@agentwallet/api";
import type { FastifyReply, FastifyRequest } from "fastify";
import type { HttpDeps } from "./httpDeps.ts";
import { hashToken, isWellFormedAdminCredential, isWellFormedToken } from "../tokens.ts";
import { forbidden, unauthorized } from "../domain/errors.ts";
import { ApiError } from "./apiError.ts";
import { checkAdminCredential, credentialActor, roleOf } from "../services/adminCredentials.ts";
import { type Actor, type AdminRole, roleAllows } from "../domain/audit.ts";
import type { AdminCredentialRow } from "../ledger/adminCredentials.ts";
import { type Principal, requirePermission } from "../domain/principal.ts";
import { parseControls } from "../domain/spending.ts";

declare module "fastify" {
  interface FastifyRequest {
    principal?: Principal;
    /** The admin credential of an `/v1/admin/…` request. */
    admin?: AdminCredentialRow;
  }
}

/** A route preHandler that authenticates (a plain function type, so apps with any logger type take it). */
export type AuthHook = (req: FastifyRequest, reply: FastifyReply) => Promise<void>;

const HOW = "Send `Authorization: Bearer <token>` with an API token (create one with `agentwallet tokens create`).";

async function authenticate(ctx: HttpDeps, req: FastifyRequest): Promise<Principal> {
  const header = req.headers.authorization;
  if (!header) throw unauthorized(`Missing Authorization header. ${HOW}`);
  const m = /^Bearer +(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized(`Authorization header must use the Bearer scheme. ${HOW}`);
  const token = m[1]!;
  if (isWellFormedAdminCredential(token)) {
    throw forbidden("project_token_required", "An admin credential manages the deployment at /v1/admin/…; it cannot pay or read as a project. Send a project's API token (`agentwallet tokens create`, or POST /v1/admin/projects/{id}/tokens).");
  }
  if (!isWellFormedToken(token)) throw unauthorized("The API token is malformed (wrong prefix, length or checksum). Copy the whole token as it was printed.");
  const row = await ctx.ledger.tokens.findByHash(hashToken(token));
  if (!row) throw unauthorized("The API token is not recognised. It may belong to another deployment or have been mistyped.");
  if (row.revoked_at) throw unauthorized("The API token has been revoked. Create a new one.");
  const now = ctx.clock().toISOString();
  if (row.expires_at && row.expires_at <= now) throw unauthorized(`The API token expired at ${row.expires_at}. Create a new one.`);
  // A child token stands only while every ancestor does; their controls bind its payments (nested budgets). The
  // lookup read them with the token.
  const ancestors = row.ancestors;
  for (const a of ancestors) {
    if (a.revoked_at) throw unauthorized(`The API token has been revoked: its ancestor token ${a.id} was revoked at ${a.revoked_at}, which revokes every token below it. Ask for a new one.`);
    if (a.expires_at && a.expires_at <= now) throw unauthorized(`The API token's ancestor token ${a.id} expired at ${a.expires_at}. Ask for a new one.`);
  }
  const allowanceMicros = row.allowance_micros === null ? null : Number(row.allowance_micros);
  const principal: Principal = {
    tokenId: row.id,
    projectId: row.project_id,
    permissions: new Set(row.permissions.split(",") as Permission[]),
    paused: row.paused === 1,
    plan: row.plan,
    walletIndex: row.wallet_index,
    balance: {
      availableMicros: row.available_micros,
      pendingMicros: row.pending_micros,
      totalFundedMicros: row.total_funded_micros,
      totalSpentMicros: row.total_spent_micros,
      walletAddress: row.wallet_address,
      walletFrozenAt: row.wallet_frozen_at,
    },
    controls:
      row.token_controls || row.project_controls || allowanceMicros !== null || ancestors.length > 0
        ? {
            token: parseControls(row.token_controls),
            project: parseControls(row.project_controls),
            allowanceMicros,
            ancestors: ancestors.map((a) => ({ tokenId: a.id, name: a.name, controls: parseControls(a.spending_controls), allowanceMicros: a.allowance_micros === null ? null : Number(a.allowance_micros) })),
          }
        : undefined,
  };
  req.principal = principal;
  return principal;
}

/**
 * The preHandler of a project route: authenticates, applies the per-token rate limit, then checks the
 * permission the route needs (so a denied token still counts against its limit); sets `req.principal`.
 */
export function tokenAuth(ctx: HttpDeps, permission: Permission): AuthHook {
  return async (req, reply) => {
    const principal = await authenticate(ctx, req);
    await applyRateLimit(ctx, reply, principal.tokenId, "token");
    requirePermission(principal, permission);
  };
}

/** The principal a route's `tokenAuth` preHandler set; a route without one is a programming error. */
export function principalOf(req: FastifyRequest): Principal {
  if (!req.principal) throw new Error(`route ${req.routeOptions.url} has no tokenAuth preHandler`);
  return req.principal;
}

async function applyRateLimit(ctx: HttpDeps, reply: FastifyReply, key: string, per: string): Promise<void> {
  const rate = await ctx.rateLimiter.hit(key);
  reply.headers({ "ratelimit-limit": rate.limit, "ratelimit-remaining": rate.remaining, "ratelimit-reset": rate.resetSeconds, "ratelimit-policy": `${rate.limit};w=60` });
  if (!rate.allowed) {
    throw new ApiError(429, "rate_limited", `Rate limit exceeded: at most ${rate.limit} requests per minute per ${per}. Retry after ${rate.resetSeconds} s.`, {
      "retry-after": String(rate.resetSeconds),
    });
  }
}

const HOW_ADMIN = "Send `Authorization: Bearer aw_admin_…` with an operator's admin credential (create one with `agentwallet admin credentials create` where the database is).";

/**
 * The admin API's authentication: an active admin credential, looked up by its SHA-256, then the rate
 * limit of that credential. A project's API token is refused here whatever its permissions (403
 * `admin_credential_required`), as an admin credential is refused everywhere else.
 */
/**
 * The admin API's preHandler: an active admin credential whose role allows `needed` (reads: `viewer`; decisions:
 * `approver`; every change: `admin`, the default), else 403 `admin_role_insufficient`.
 */
export function adminAuth(ctx: HttpDeps, needed: AdminRole = "admin"): AuthHook {
  return async (req, reply) => {
    await authenticateAdmin(ctx, req, reply);
    const role = roleOf(req.admin!);
    if (!roleAllows(role, needed)) throw forbidden("admin_role_insufficient", `This admin credential's role is ${role}; this needs ${needed}${needed === "admin" ? "" : " or admin"}. Ask an operator for a credential with that role (\`agentwallet admin credentials create --role ${needed}\`).`);
  };
}

/** The audit log's actor for the request's admin credential, with the client's address. */
export function adminActor(req: FastifyRequest): Actor {
  return credentialActor(adminOf(req), req.ip);
}

/** The admin credential a route's `adminAuth` preHandler set; a route without one is a programming error. */
export function adminOf(req: FastifyRequest): AdminCredentialRow {
  if (!req.admin) throw new Error(`route ${req.routeOptions.url} has no adminAuth preHandler`);
  return req.admin;
}

async function authenticateAdmin(ctx: HttpDeps, req: FastifyRequest, reply: FastifyReply): Promise<void> {
  const header = req.headers.authorization;
  if (!header) throw unauthorized(`Missing Authorization header. ${HOW_ADMIN}`);
  const m = /^Bearer +(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized(`Authorization header must use the Bearer scheme. ${HOW_ADMIN}`);
  if (isWellFormedToken(m[1]!)) throw forbidden("admin_credential_required", `A project's API token cannot use the admin API, whatever its permissions. ${HOW_ADMIN}`);
  const check = await checkAdminCredential(ctx, m[1]!);
  if (check.kind === "malformed") throw unauthorized("The admin credential is malformed (wrong prefix, length or checksum). Copy the whole credential as it was printed.");
  if (check.kind === "unknown") throw unauthorized("The admin credential is not recognised. It may belong to another deployment or have been mistyped.");
  if (check.kind === "revoked") throw unauthorized(`The admin credential was revoked at ${check.credential.revoked_at}. Create a new one with \`agentwallet admin credentials create\`.`);
  req.admin = check.credential;
  await applyRateLimit(ctx, reply, `admin:${check.credential.id}`, "admin credential");
}
