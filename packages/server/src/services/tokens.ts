/**
 * Issuing, listing and revoking API tokens, with their spending controls. The token text exists only in
 * the return of `createToken` / `issueToken`. The CLI and the admin API both call these.
 */
import { type Permission, limits } from "@agentwallet/api";
import type { ProjectStore, TokenStore } from "../ledger/ports.ts";
import type { Clock, IdGenerator } from "../ids.ts";
import { isEmptyControls, parseControls } from "../domain/spending.ts";
import { displayPrefix, generateToken, hashToken, type TokenMode } from "../tokens.ts";
import { badRequest, notFound } from "../domain/errors.ts";
import { type SpendingContext, type WireControls, bankKeyOf, controlsColumn, microsToUsd, parseControlsInput, renderControls } from "./spendingControls.ts";
import type { ListedTokenRow } from "../ledger/tokens.ts";
import { projectNotFound } from "./projects.ts";
import type { Actor } from "../domain/audit.ts";

/** The permissions that read and move money; `delegate` (creating child tokens) is given apart from them. */
export const ALL_PERMISSIONS: Permission[] = ["read", "pay", "x402"];
/** Every permission a token may carry. */
export const PERMISSIONS: Permission[] = [...ALL_PERMISSIONS, "delegate"];

export function parsePermissions(text: string): Permission[] {
  const perms = text.split(",").map((p) => p.trim()).filter(Boolean);
  const bad = perms.filter((p) => !PERMISSIONS.includes(p as Permission));
  if (bad.length || perms.length === 0) throw new Error(`permissions must be a comma-separated subset of ${PERMISSIONS.join(",")} (got "${text}")`);
  return [...new Set(perms)] as Permission[];
}

/** A token's name as given: trimmed, 1 to limits.tokenNameMaxChars characters. */
export function tokenName(text: string): string {
  const name = text.trim();
  if (name.length === 0 || name.length > limits.tokenNameMaxChars) throw new Error(`a token's name is 1 to ${limits.tokenNameMaxChars} characters (got ${name.length})`);
  return name;
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
  deps: { ledger: { tokens: TokenStore; projects: ProjectStore }; clock: Clock; newId: IdGenerator },
  input: { projectId: string; permissions: Permission[]; mode: TokenMode; expiresInMs?: number; spendingControls?: string | null; name?: string | null },
  actor?: Actor,
): Promise<{ id: string; token: string; permissions: Permission[]; expires_at: string | null }> {
  const project = await deps.ledger.projects.get(input.projectId);
  if (!project) throw projectNotFound(input.projectId);
  const token = generateToken(input.mode);
  const now = deps.clock();
  const expiresAt = input.expiresInMs ? new Date(now.getTime() + input.expiresInMs).toISOString() : null;
  const id = deps.newId("tok");
  await deps.ledger.tokens.insert({
    id,
    project_id: input.projectId,
    token_hash: hashToken(token),
    display_prefix: displayPrefix(token),
    permissions: input.permissions.join(","),
    created_at: now.toISOString(),
    expires_at: expiresAt,
    revoked_at: null,
    spending_controls: input.spendingControls ?? null,
    name: input.name ?? null,
  }, actor);
  return { id, token, permissions: input.permissions, expires_at: expiresAt };
}

/**
 * Whether a token may manage its project's tokens and approve its payments (the console's rule for a token
 * session): it holds every permission and no spending controls of its own, so it could already spend all the
 * project has and gains nothing by lifting another token's limits. A token with fewer permissions or with
 * controls could otherwise sign in and lift its own limits or approve its own payments.
 */
export function mayManageProject(token: { permissions: string; spending_controls: string | null; parent_id?: string | null; allowance_micros?: number | null }): boolean {
  const perms = token.permissions.split(",");
  // A child token is bounded by its ancestors: managing the project would let it lift their limits.
  if ((token.parent_id ?? null) !== null || (token.allowance_micros ?? null) !== null) return false;
  return ALL_PERMISSIONS.every((p) => perms.includes(p)) && isEmptyControls(parseControls(token.spending_controls));
}

/**
 * Whether a token may approve or deny its project's waiting payments: it may manage the project, and the
 * project sets no approval threshold of its own. The operator set that threshold for every token; a token
 * approving what it (or a token it created) paid would undo it, so those decisions are the operator's.
 */
export function mayDecideApprovals(token: Parameters<typeof mayManageProject>[0], projectControls: string | null): boolean {
  return mayManageProject(token) && (parseControls(projectControls)?.approvalAboveMicros ?? null) === null;
}

/** A token as the audit log names it when it acts: its id, and its name or else its display prefix. */
export function tokenActor(t: { id: string; name: string | null; display_prefix: string }, ip: string | null): Actor {
  return { id: t.id, name: t.name ?? `token ${t.display_prefix}…`, role: null, ip };
}

/** The one JSON shape of a token (never its secret; creating one adds `token`, shown that once). */
export function tokenJson(t: ListedTokenRow, now: string) {
  const state = t.revoked_at ? "revoked" : t.expires_at && t.expires_at <= now ? "expired" : "active";
  return {
    id: t.id,
    project_id: t.project_id,
    display_prefix: t.display_prefix,
    name: t.name,
    permissions: t.permissions.split(",") as Permission[],
    spending_controls: renderControls(parseControls(t.spending_controls)),
    parent_id: t.parent_id,
    depth: Number(t.depth),
    allowance_usd: t.allowance_micros === null ? null : microsToUsd(Number(t.allowance_micros)),
    created_at: t.created_at,
    expires_at: t.expires_at,
    revoked_at: t.revoked_at,
    state,
  };
}

/**
 * A new token with its spending controls, written together (controls that do not parse create nothing).
 * Returns the token's JSON shape and, this once, the token itself.
 */
export async function issueToken(
  ctx: SpendingContext & { newId: IdGenerator },
  input: { projectId: string; permissions: Permission[]; mode: TokenMode; expiresInMs?: number; controls?: WireControls; name?: string | null },
  actor?: Actor,
) {
  const column = input.controls ? controlsColumn(parseControlsInput(input.controls, ctx.recipientHashKey ?? bankKeyOf(ctx))) : null;
  const created = await createToken(ctx, { ...input, spendingControls: column }, actor);
  return { ...tokenJson((await ctx.ledger.tokens.get(created.id))!, ctx.clock().toISOString()), token: created.token };
}

export async function listTokens(ctx: { ledger: { tokens: TokenStore; projects: ProjectStore }; clock: Clock }, projectId: string) {
  if (!(await ctx.ledger.projects.get(projectId))) throw projectNotFound(projectId);
  const now = ctx.clock().toISOString();
  return (await ctx.ledger.tokens.list(projectId)).map((t) => tokenJson(t, now));
}

export async function getToken(ctx: { ledger: { tokens: TokenStore }; clock: Clock }, id: string) {
  const t = await ctx.ledger.tokens.get(id);
  if (!t) throw notFound("token_not_found", `There is no token with id ${id.slice(0, 80)}.`);
  return tokenJson(t, ctx.clock().toISOString());
}

/** Revokes an active token and every descendant of it: requests with any of them are refused from the next one on (and their console sessions end). */
export async function revokeToken(ctx: { ledger: { tokens: TokenStore }; clock: Clock }, id: string, actor?: Actor) {
  if (!(await ctx.ledger.tokens.revoke(id, actor))) {
    const t = await ctx.ledger.tokens.get(id);
    throw t ? badRequest("already_revoked", `There is no active token with id ${id}: it was revoked at ${t.revoked_at}.`) : notFound("token_not_found", `There is no active token with id ${id.slice(0, 80)}.`);
  }
  return getToken(ctx, id);
}
