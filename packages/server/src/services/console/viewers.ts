/**
 * Who may change what through the console: the server's rule, whatever the pages show or hide. The operator
 * may change every project; a project token only its own project, while it is active and may manage it
 * (services/tokens.ts `mayManageProject`), and it decides approvals only when the project sets no approval
 * threshold of its own (`mayDecideApprovals`). The token is read again at each change, so a revocation counts at once.
 */
import type { Viewer } from "@agentwallet/console";
import { forbidden } from "../../domain/errors.ts";
import { type Actor, roleAllows } from "../../domain/audit.ts";
import type { ServiceDeps } from "../serviceDeps.ts";
import { mayDecideApprovals, mayManageProject } from "../tokens.ts";
import { credentialActor } from "../adminCredentials.ts";

/** What the console's use cases read: the ledger and the time. */
export type ConsoleDeps = Pick<ServiceDeps, "ledger" | "clock">;

/** Whether a token is in force at `now` (ISO): neither revoked nor expired. A token that is not there is not. */
export function tokenActive(t: { expires_at: string | null; revoked_at: string | null } | undefined, now: string): boolean {
  return !!t && !t.revoked_at && !(t.expires_at && t.expires_at <= now);
}

/**
 * Refuses (403 `permission_denied`) a viewer who may not change this project (`manage`: tokens, webhooks; an
 * operator of role admin) or decide its approvals (`decide`; an operator of role approver or admin); otherwise
 * names who acts, as the change and its audit entry record it: the admin credential the operator signed in
 * with (read again, so a revoked one or a changed role counts at once), or the token by its id and prefix.
 */
export async function authorizeChange(deps: ConsoleDeps, viewer: Viewer, projectId: string, what: "manage" | "decide" = "manage"): Promise<Actor> {
  const ip = viewer.ip ?? null;
  if (viewer.kind === "operator") {
    const c = await deps.ledger.adminCredentials.get(viewer.credentialId);
    if (!c || c.revoked_at) throw forbidden("permission_denied", "This admin credential was revoked: sign in again.");
    const actor = credentialActor(c, ip);
    const needed = what === "decide" ? "approver" : "admin";
    if (!roleAllows(actor.role!, needed)) throw forbidden("permission_denied", `This sign-in's role is ${actor.role}: ${what === "decide" ? "approving and denying payments needs approver or admin" : "changing tokens, controls and webhooks needs admin"}.`);
    return actor;
  }
  const t = await deps.ledger.tokens.get(viewer.tokenId);
  if (!t || !tokenActive(t, deps.clock().toISOString()) || t.project_id !== projectId || !mayManageProject(t)) {
    throw forbidden("permission_denied", "This token may not manage tokens or approvals: that needs the operator, or a token with read, pay and x402 and no spending controls of its own.");
  }
  if (what === "decide" && !mayDecideApprovals(t, (await deps.ledger.projects.get(projectId))?.spending_controls ?? null)) {
    throw forbidden("permission_denied", "This project's own approval threshold is the operator's: only the operator approves or denies its payments.");
  }
  return { id: t.id, name: `token ${t.display_prefix}…`, role: null, ip };
}
