/**
 * What a console sign-in accepts: a project token in force (the API's own rule), an active admin credential
 * (the admin API's check, services/adminCredentials.ts), or a one-time sign-in code the sandbox banner prints,
 * which names a token and works once, within a day.
 */
import { randomBytes } from "node:crypto";
import { hashToken, isWellFormedToken } from "../../tokens.ts";
import { checkAdminCredential } from "../adminCredentials.ts";
import { type ConsoleDeps, tokenActive } from "./viewers.ts";

/** A sign-in code lasts 24 hours and one use. */
export const SIGNIN_CODE_MS = 24 * 3_600_000;

/** A project token's identity if it is well formed, known and in force; else null. */
export async function verifyToken(deps: ConsoleDeps, token: string) {
  if (!isWellFormedToken(token)) return null;
  const row = await deps.ledger.tokens.findByHash(hashToken(token));
  if (!row || !tokenActive(row, deps.clock().toISOString())) return null;
  return { tokenId: row.id, projectId: row.project_id };
}

/** The admin credential's id if the text is an active admin credential of this deployment; else null. */
export async function verifyAdminCredential(deps: Pick<ConsoleDeps, "ledger">, secret: string): Promise<string | null> {
  const check = await checkAdminCredential(deps, secret);
  return check.kind === "valid" ? check.credential.id : null;
}

/** The token a sign-in code names, once, if the token is still in force; else null. */
export async function redeemSignInCode(deps: ConsoleDeps, code: string) {
  const now = deps.clock().toISOString();
  const token = await deps.ledger.consoleSessions.redeemCode(code, now);
  return token && tokenActive(token, now) ? { tokenId: token.id, projectId: token.project_id } : null;
}

/** A one-time sign-in link's code for this token (the sandbox banner prints it). */
export async function createSignInCode(deps: ConsoleDeps, tokenId: string): Promise<string> {
  const code = randomBytes(24).toString("base64url");
  await deps.ledger.consoleSessions.createCode(code, tokenId, new Date(deps.clock().getTime() + SIGNIN_CODE_MS).toISOString());
  return code;
}
