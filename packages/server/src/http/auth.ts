/**
 * Bearer-token authentication. Every request looks the token up by its SHA-256 (so revocation and
 * expiry take effect on the next request); a malformed token is refused without a lookup. The token
 * text is never logged: only its id reaches the request log.
 */
import type { Permission } from "@agentwallet/api";
import type { FastifyRequest } from "fastify";
import type { AppContext } from "../context.ts";
import type { Plan } from "../ledger/schema.ts";
import { hashToken, isWellFormedToken } from "../tokens.ts";
import { forbidden, unauthorized } from "./errors.ts";

/** The project's balance as read in the authenticating statement, at the start of this request. */
export type BalanceSnapshot = { availableMicros: number; pendingMicros: number; totalFundedMicros: number; totalSpentMicros: number; walletAddress: string | null };

export type Principal = { tokenId: string; projectId: string; permissions: Set<Permission>; paused: boolean; plan: Plan; balance: BalanceSnapshot };

declare module "fastify" {
  interface FastifyRequest {
    principal?: Principal;
  }
}

const HOW = "Send `Authorization: Bearer <token>` with an API token (create one with `agentwallet tokens create`).";

export async function authenticate(ctx: AppContext, req: FastifyRequest): Promise<Principal> {
  const header = req.headers.authorization;
  if (!header) throw unauthorized(`Missing Authorization header. ${HOW}`);
  const m = /^Bearer +(\S+)\s*$/i.exec(header);
  if (!m) throw unauthorized(`Authorization header must use the Bearer scheme. ${HOW}`);
  const token = m[1]!;
  if (!isWellFormedToken(token)) throw unauthorized("The API token is malformed (wrong prefix, length or checksum). Copy the whole token as it was printed.");
  const row = await ctx.ledger.findTokenByHash(hashToken(token));
  if (!row) throw unauthorized("The API token is not recognised. It may belong to another deployment or have been mistyped.");
  if (row.revoked_at) throw unauthorized("The API token has been revoked. Create a new one.");
  if (row.expires_at && row.expires_at <= ctx.clock().toISOString()) throw unauthorized(`The API token expired at ${row.expires_at}. Create a new one.`);
  const principal: Principal = {
    tokenId: row.id,
    projectId: row.project_id,
    permissions: new Set(row.permissions.split(",") as Permission[]),
    paused: row.paused === 1,
    plan: row.plan,
    balance: {
      availableMicros: row.available_micros,
      pendingMicros: row.pending_micros,
      totalFundedMicros: row.total_funded_micros,
      totalSpentMicros: row.total_spent_micros,
      walletAddress: row.wallet_address,
    },
  };
  req.principal = principal;
  return principal;
}

export function requirePermission(p: Principal, ...needed: Permission[]): void {
  const missing = needed.filter((n) => !p.permissions.has(n));
  if (missing.length) {
    throw forbidden("permission_denied", `This token lacks the '${missing.join("' and '")}' permission${missing.length > 1 ? "s" : ""} needed here. Use a token created with --permissions ${[...new Set([...p.permissions, ...missing])].join(",")}.`);
  }
}

export function requireActive(p: Principal): void {
  if (p.paused) throw forbidden("project_paused", "This project is paused: payments are refused until an operator resumes it (`agentwallet projects resume`).");
}
