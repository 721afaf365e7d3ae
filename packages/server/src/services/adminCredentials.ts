/**
 * Operators' admin credentials: `aw_admin_…`, a credential of the deployment (never of a project) that the
 * admin API (`/v1/admin/…`) and the console's operator sign-in accept, and nothing else does. Created only
 * by the CLI on the database's host (`agentwallet admin credentials create`), the root of trust; shown once,
 * stored as its SHA-256 like API tokens (tokens.ts).
 */
import type { Clock, IdGenerator } from "../ids.ts";
import type { AdminCredentialStore } from "../ledger/ports.ts";
import type { AdminCredentialRow } from "../ledger/adminCredentials.ts";
import { badRequest, notFound } from "../domain/errors.ts";
import { ADMIN_ROLES, type Actor, type AdminRole } from "../domain/audit.ts";
import { displayPrefix, generateAdminCredential, hashToken, isWellFormedAdminCredential } from "../tokens.ts";

/** A deployment has a handful of operators; listing stops here. */
export const ADMIN_CREDENTIALS_LIST_MAX = 1_000;
export const ADMIN_CREDENTIAL_NAME_MAX_CHARS = 200;

type Deps = { ledger: { adminCredentials: AdminCredentialStore }; clock: Clock; newId: IdGenerator };

/** The one JSON shape of an admin credential (never the secret; `create` adds `credential`, shown that once). */
export function adminCredentialJson(c: AdminCredentialRow) {
  return { id: c.id, name: c.name, role: roleOf(c), display_prefix: c.display_prefix, created_at: c.created_at, revoked_at: c.revoked_at, state: c.revoked_at ? "revoked" : "active" };
}

/** A credential's role as stored (a row that predates roles reads admin, as migration 0028 set it). */
export function roleOf(c: Pick<AdminCredentialRow, "role">): AdminRole {
  return (ADMIN_ROLES as readonly string[]).includes(c.role) ? (c.role as AdminRole) : "admin";
}

/** The actor an admin credential makes of its holder, for the audit log and a decision's name. */
export function credentialActor(c: Pick<AdminCredentialRow, "id" | "name" | "role">, ip: string | null): Actor {
  return { id: c.id, name: c.name, role: roleOf(c), ip };
}

/** Creates a credential (role `admin` unless given); `actor`: who ran the command, for the audit log. */
export async function createAdminCredential(deps: Deps, input: { name?: string; role?: string }, actor?: Actor) {
  const name = (input.name ?? "operator").trim();
  if (name.length === 0 || name.length > ADMIN_CREDENTIAL_NAME_MAX_CHARS) throw badRequest("invalid_request", `The name must be 1 to ${ADMIN_CREDENTIAL_NAME_MAX_CHARS} characters.`);
  const role = input.role ?? "admin";
  if (!(ADMIN_ROLES as readonly string[]).includes(role)) throw badRequest("invalid_request", `The role must be ${ADMIN_ROLES.join(", ")} (got "${role.slice(0, 40)}").`);
  const credential = generateAdminCredential();
  const row: AdminCredentialRow = { id: deps.newId("adm"), name, credential_hash: hashToken(credential), display_prefix: displayPrefix(credential), created_at: deps.clock().toISOString(), revoked_at: null, role };
  await deps.ledger.adminCredentials.insert(row, actor);
  return { ...adminCredentialJson(row), credential };
}

export async function listAdminCredentials(deps: Pick<Deps, "ledger">) {
  return (await deps.ledger.adminCredentials.list(ADMIN_CREDENTIALS_LIST_MAX)).map(adminCredentialJson);
}

export async function revokeAdminCredential(deps: Pick<Deps, "ledger" | "clock">, id: string, actor?: Actor) {
  if (!(await deps.ledger.adminCredentials.revoke(id, deps.clock().toISOString(), actor))) {
    const row = await deps.ledger.adminCredentials.get(id);
    throw row ? badRequest("already_revoked", `Admin credential ${id} was revoked at ${row.revoked_at}.`) : notFound("admin_credential_not_found", `No admin credential ${id.slice(0, 80)}. List them with \`agentwallet admin credentials list\`.`);
  }
  return adminCredentialJson((await deps.ledger.adminCredentials.get(id))!);
}

export type AdminCheck =
  | { kind: "valid"; credential: AdminCredentialRow }
  | { kind: "malformed" }
  | { kind: "unknown" }
  | { kind: "revoked"; credential: AdminCredentialRow };

/** Whether the text is an active admin credential of this deployment (one lookup by hash; none when malformed). */
export async function checkAdminCredential(deps: Pick<Deps, "ledger">, text: string): Promise<AdminCheck> {
  if (!isWellFormedAdminCredential(text)) return { kind: "malformed" };
  const row = await deps.ledger.adminCredentials.findByHash(hashToken(text));
  if (!row) return { kind: "unknown" };
  return row.revoked_at ? { kind: "revoked", credential: row } : { kind: "valid", credential: row };
}
