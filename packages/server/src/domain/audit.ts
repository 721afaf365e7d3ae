/**
 * The audit trail's words: who acted (an `Actor`), in which role, and what an entry records. Every operator
 * and token-management change names its actor, and the ledger writes the entry in the transaction of the
 * change (ledger/auditLog.ts), so the log can never say something happened that did not, or miss what did.
 */

/** An admin credential's role: `viewer` reads everything; `approver` also decides waiting payments; `admin` does everything. */
export type AdminRole = "viewer" | "approver" | "admin";
export const ADMIN_ROLES: readonly AdminRole[] = ["viewer", "approver", "admin"];

/** Whether `role` includes what `needed` may do (the roles are nested: viewer ⊂ approver ⊂ admin). */
export function roleAllows(role: AdminRole, needed: AdminRole): boolean {
  return ADMIN_ROLES.indexOf(role) >= ADMIN_ROLES.indexOf(needed);
}

/**
 * Who acts, as an entry records it: `id` is stable (`adm_…`, `tok_…`, `cli:<user>`), `name` is for people (the
 * credential's name, the token's display prefix, the CLI's user), `role` the credential's (null for a token or
 * the CLI, which is the root of trust), `ip` the client's address (null on the CLI).
 */
export type Actor = { id: string; name: string; role: AdminRole | null; ip: string | null };

export const AUDIT_ACTIONS = [
  "project.paused",
  "project.resumed",
  "project.controls_changed",
  "token.created",
  "token.controls_changed",
  "token.revoked",
  "webhook.created",
  "webhook.deleted",
  "webhook.enabled",
  "approval.decided",
  "credential.created",
  "credential.revoked",
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

/** What changed: the action, its project (null for the deployment's own credentials), its object, and its state before and after. */
export type AuditChange = { action: AuditAction; projectId: string | null; targetId: string; before: unknown; after: unknown };

/** One entry as it is read back. */
export type AuditEntry = AuditChange & { seq: number; at: string; actor: Actor };
