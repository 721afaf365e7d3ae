/** Issuing, listing and revoking API tokens. The token text exists only in the return of `createToken`. */
import type { Permission } from "@agentwallet/api";
import type { Ledger } from "../ledger/store.ts";
import type { Clock, IdGenerator } from "../ids.ts";
import { isEmptyControls, parseControls } from "../domain/spending.ts";
import { displayPrefix, generateToken, hashToken, type TokenMode } from "../tokens.ts";

export const ALL_PERMISSIONS: Permission[] = ["read", "pay", "x402"];

export function parsePermissions(text: string): Permission[] {
  const perms = text.split(",").map((p) => p.trim()).filter(Boolean);
  const bad = perms.filter((p) => !ALL_PERMISSIONS.includes(p as Permission));
  if (bad.length || perms.length === 0) throw new Error(`permissions must be a comma-separated subset of read,pay,x402 (got "${text}")`);
  return [...new Set(perms)] as Permission[];
}

/** "30d", "12h", "90m" → milliseconds. */
export function parseDuration(text: string): number {
  const m = /^(\d+)([dhm])$/.exec(text);
  if (!m) throw new Error(`duration must look like 30d, 12h or 90m (got "${text}")`);
  const n = Number(m[1]);
  const unit = { d: 86_400_000, h: 3_600_000, m: 60_000 }[m[2] as "d" | "h" | "m"];
  if (n <= 0 || n > 3650 * 86_400_000 / unit) throw new Error(`duration out of range: ${text}`);
  return n * unit;
}

export async function createToken(
  deps: { ledger: Ledger; clock: Clock; newId: IdGenerator },
  input: { projectId: string; permissions: Permission[]; mode: TokenMode; expiresInMs?: number },
): Promise<{ id: string; token: string; permissions: Permission[]; expires_at: string | null }> {
  const project = await deps.ledger.getProject(input.projectId);
  if (!project) throw new Error(`no project with id ${input.projectId}`);
  const token = generateToken(input.mode);
  const now = deps.clock();
  const expiresAt = input.expiresInMs ? new Date(now.getTime() + input.expiresInMs).toISOString() : null;
  const id = deps.newId("tok");
  await deps.ledger.insertToken({
    id,
    project_id: input.projectId,
    token_hash: hashToken(token),
    display_prefix: displayPrefix(token),
    permissions: input.permissions.join(","),
    created_at: now.toISOString(),
    expires_at: expiresAt,
    revoked_at: null,
  });
  return { id, token, permissions: input.permissions, expires_at: expiresAt };
}

/**
 * Whether a token may manage its project's tokens and approve its payments (the console's rule for a token
 * session): it holds every permission and no spending controls of its own, so it could already spend all the
 * project has and gains nothing by lifting another token's limits. A token with fewer permissions or with
 * controls could otherwise sign in and lift its own limits or approve its own payments.
 */
export function mayManageProject(token: { permissions: string; spending_controls: string | null }): boolean {
  const perms = token.permissions.split(",");
  return ALL_PERMISSIONS.every((p) => perms.includes(p)) && isEmptyControls(parseControls(token.spending_controls));
}
