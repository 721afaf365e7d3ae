/**
 * A project's API tokens in the console (the Agents pages): each with its place in the tree of child tokens,
 * its controls and its spend against them now (services/spendingControls.ts `getTokenLimits`, what its `GET /v1/limits` answers), and the changes, made
 * by the CLI's and the admin API's own functions (services/tokens.ts, spendingControls.ts) once
 * `authorizeChange` lets the viewer make them.
 */
import type { Permission } from "@agentwallet/api";
import type { Controls, NewToken, TokenSummary, Viewer } from "@agentwallet/console";
import { parseControls } from "../../domain/spending.ts";
import type { ServiceDeps } from "../serviceDeps.ts";
import { getTokenLimits, renderControls, updateTokenControls as updateControlsOf } from "../spendingControls.ts";
import { issueToken, revokeToken as revokeApiToken } from "../tokens.ts";
import { authorizeChange } from "./viewers.ts";
import type { ListedTokenRow } from "../../ledger/tokens.ts";

type TokenDeps = Pick<ServiceDeps, "ledger" | "clock" | "config" | "recipientHashKey">;

/**
 * A token with its spend now against every window that binds it: its own, its allowance, each ancestor's and
 * the project's, the very numbers its own `GET /v1/limits` answers (getTokenLimits).
 */
async function summaryOf(deps: TokenDeps, t: ListedTokenRow): Promise<TokenSummary> {
  const limits = await getTokenLimits(deps, t.id);
  return {
    id: t.id,
    display_prefix: t.display_prefix,
    name: t.name,
    parent_id: t.parent_id,
    depth: Number(t.depth),
    permissions: t.permissions.split(",") as Permission[],
    created_at: t.created_at,
    expires_at: t.expires_at,
    revoked_at: t.revoked_at,
    controls: limits.token,
    windows: limits.windows,
  };
}

/** The token if it is this project's; a token of another project is answered as an unknown one. */
async function tokenOf(deps: Pick<ServiceDeps, "ledger">, projectId: string, tokenId: string) {
  const t = await deps.ledger.tokens.get(tokenId);
  return t && t.project_id === projectId ? t : undefined;
}

export async function listTokens(deps: TokenDeps, projectId: string): Promise<TokenSummary[]> {
  return Promise.all((await deps.ledger.tokens.list(projectId)).map((t) => summaryOf(deps, t)));
}

export async function getToken(deps: TokenDeps, projectId: string, tokenId: string): Promise<TokenSummary | null> {
  const t = await tokenOf(deps, projectId, tokenId);
  return t ? summaryOf(deps, t) : null;
}

/** The project's own controls, which every token of it obeys too. */
export async function projectControls(deps: Pick<ServiceDeps, "ledger">, projectId: string): Promise<Controls | null> {
  return renderControls(parseControls((await deps.ledger.projects.get(projectId))?.spending_controls));
}

/** A new token with its controls, written together (the service the CLI and the admin API issue tokens with). */
export async function createToken(
  deps: TokenDeps & Pick<ServiceDeps, "newId">,
  viewer: Viewer,
  projectId: string,
  input: { permissions: Permission[]; expiresInDays: number | null; controls: Controls },
): Promise<NewToken> {
  const actor = await authorizeChange(deps, viewer, projectId);
  const issued = await issueToken(deps, {
    projectId,
    permissions: input.permissions,
    mode: deps.config.mode === "live" ? "live" : "test",
    ...(input.expiresInDays ? { expiresInMs: input.expiresInDays * 86_400_000 } : {}),
    controls: input.controls,
  }, actor);
  return { id: issued.id, token: issued.token, permissions: issued.permissions as Permission[], expires_at: issued.expires_at };
}

/** Replaces the fields given of the token's controls; false if the project has no such token. */
export async function updateTokenControls(deps: TokenDeps, viewer: Viewer, projectId: string, tokenId: string, controls: Partial<Controls>): Promise<boolean> {
  const actor = await authorizeChange(deps, viewer, projectId);
  if (!(await tokenOf(deps, projectId, tokenId))) return false;
  return updateControlsOf(deps, tokenId, controls, actor);
}

/** Revokes the token; false if the project has no such active token. */
export async function revokeToken(deps: TokenDeps, viewer: Viewer, projectId: string, tokenId: string): Promise<boolean> {
  const actor = await authorizeChange(deps, viewer, projectId);
  const t = await tokenOf(deps, projectId, tokenId);
  if (!t || t.revoked_at) return false;
  await revokeApiToken(deps, tokenId, actor);
  return true;
}
