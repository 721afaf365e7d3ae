/**
 * Console sessions: made at sign-in for the operator (an admin credential) or one project token, read on
 * every page, ended at sign-out. Only a hash of the session id is stored (ledger/consoleSessions.ts); the
 * CSRF token is derived from the id, so it needs no row. A session lasts while what signed in is in force:
 * a revoked or expired token, or a revoked credential, ends it on the next page.
 */
import { randomBytes } from "node:crypto";
import type { Permission } from "@agentwallet/api";
import type { Session } from "@agentwallet/console";
import { hashToken } from "../../tokens.ts";
import { roleOf } from "../adminCredentials.ts";
import { mayDecideApprovals, mayManageProject } from "../tokens.ts";
import { type ConsoleDeps, tokenActive } from "./viewers.ts";

/** A console session lasts 12 hours. */
export const SESSION_MS = 12 * 3_600_000;

const csrfOf = (sessionId: string) => hashToken(`console-csrf:${sessionId}`).slice(0, 43);

export async function createSession(deps: ConsoleDeps, viewer: { kind: "operator"; credentialId: string } | { kind: "token"; tokenId: string }) {
  const id = randomBytes(32).toString("base64url");
  const now = deps.clock();
  const expiresAt = new Date(now.getTime() + SESSION_MS).toISOString();
  await deps.ledger.consoleSessions.create(id, viewer.kind, viewer.kind === "token" ? viewer.tokenId : null, now.toISOString(), expiresAt, viewer.kind === "operator" ? viewer.credentialId : null);
  return { id, csrf: csrfOf(id), expiresAt };
}

/** The session's viewer as of now, with what a token may do read again; null once it ended. */
export async function getSession(deps: ConsoleDeps, id: string): Promise<Session | null> {
  const row = await deps.ledger.consoleSessions.get(id, deps.clock().toISOString());
  if (!row) return null;
  const base = { id, csrf: csrfOf(id), expiresAt: row.expires_at };
  // An operator's session lasts while its admin credential is active: revoking it ends the session.
  if (row.kind === "operator") return row.admin && !row.admin.revoked_at ? { ...base, viewer: { kind: "operator", credentialId: row.admin.id, name: row.admin.name, role: roleOf(row.admin) } } : null;
  if (!row.token || !row.token_id || !tokenActive(row.token, deps.clock().toISOString())) return null;
  const t = row.token;
  const manage = mayManageProject(t);
  const decide = manage && mayDecideApprovals(t, (await deps.ledger.projects.get(t.project_id))?.spending_controls ?? null);
  return { ...base, viewer: { kind: "token", projectId: t.project_id, tokenId: row.token_id, permissions: t.permissions.split(",") as Permission[], manage, decide } };
}

export async function deleteSession(deps: Pick<ConsoleDeps, "ledger">, id: string): Promise<void> {
  await deps.ledger.consoleSessions.delete(id);
}
