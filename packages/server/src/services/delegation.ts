/**
 * Child tokens, created, listed, read and revoked by a token with `delegate` (`/v1/tokens`, and the MCP
 * server's `create_sub_agent_token` through it). A child is never wider than its creator
 * (domain/delegation.ts), judged against the creator's row as it is when the child is written; a token
 * sees and revokes only its own descendants (another branch's ids answer as unknown), and revoking one
 * revokes everything below it (ledger/tokens.ts `revoke`). The nested budgets themselves are the hold's
 * (domain/spending.ts: every ancestor's controls, windows and allowance in the same write).
 */
import type { CreateChildTokenRequest, Permission } from "@agentwallet/api";
import type { IdGenerator } from "../ids.ts";
import type { Principal } from "../domain/principal.ts";
import { badRequest, forbidden, notFound, unauthorized } from "../domain/errors.ts";
import { inheritFromParent, widerThanParent } from "../domain/delegation.ts";
import { isEmptyControls, parseControls } from "../domain/spending.ts";
import type { ListedTokenRow } from "../ledger/tokens.ts";
import { parseDecimalAmount } from "../money.ts";
import { displayPrefix, generateToken, hashToken } from "../tokens.ts";
import { type SpendingContext, bankKeyOf, controlsColumn, getTokenLimits, microsToUsd, parseControlsInput } from "./spendingControls.ts";
import { tokenActor, tokenJson, tokenName, revokeToken } from "./tokens.ts";
import type { Actor } from "../domain/audit.ts";

/** What these functions use of the application's context. */
export type DelegationContext = SpendingContext & { newId: IdGenerator; config: { mode: string; delegation: { depthMax: number; childrenMax: number } } };

/** At most this many descendants in one `GET /v1/tokens` answer (oldest first). */
export const CHILD_TOKENS_LIST_MAX = 1_000;

/** Creates a child of the calling token; the answer carries the child's secret this once. `ip`: the client's address, for the audit log. */
export async function createChildToken(ctx: DelegationContext, principal: Principal, input: CreateChildTokenRequest, ip: string | null = null) {
  const { depthMax, childrenMax } = ctx.config.delegation;
  const permissions = [...new Set(input.permissions)] as Permission[];
  const bankKey = ctx.recipientHashKey ?? bankKeyOf(ctx);
  const given = input.spending_controls ?? {};
  const asked = parseControlsInput(given, bankKey);
  const allowanceMicros = input.allowance_usd === undefined ? undefined : usdMicros(input.allowance_usd);
  const name = input.name === undefined ? null : tokenName(input.name);
  const secret = generateToken(ctx.config.mode === "live" ? "live" : "test");
  const now = ctx.clock();
  const id = ctx.newId("tok");
  const actor = await callerActor(ctx, principal, ip);
  await ctx.ledger.tokens.insertChild(principal.tokenId, { id, project_id: principal.projectId, token_hash: hashToken(secret), display_prefix: displayPrefix(secret), permissions: permissions.join(","), created_at: now.toISOString(), expires_at: null, revoked_at: null, name }, actor, (parent, activeChildren) => {
    if (parent.revoked_at) throw unauthorized(`The API token was revoked at ${parent.revoked_at}. Ask for a new one.`);
    const depth = Number(parent.depth) + 1;
    if (depth > depthMax) throw forbidden("delegation_depth_exceeded", `This token is at depth ${parent.depth}, the deepest a token may create children from is ${depthMax - 1} (TOKEN_DEPTH_MAX=${depthMax}). Create the sub-agent's token from a token higher up, or ask an operator.`);
    if (permissions.includes("delegate") && depth >= depthMax) {
      throw forbidden("delegation_depth_exceeded", `A child at depth ${depth} could not create children of its own (TOKEN_DEPTH_MAX=${depthMax}), so it may not have the delegate permission. Leave delegate out.`);
    }
    if (activeChildren >= childrenMax) throw forbidden("child_tokens_limit", `This token has ${activeChildren} active children, the most it may have (TOKEN_CHILDREN_MAX=${childrenMax}). Revoke one (DELETE /v1/tokens/{id}) first.`);
    const parentControls = parseControls(parent.spending_controls);
    const controls = inheritFromParent(parentControls, asked, {
      limits: given.spending_limits !== undefined,
      allowedRecipients: given.allowed_recipients !== undefined,
      blockedRecipients: given.blocked_recipients !== undefined,
      allowedRails: given.allowed_rails !== undefined,
      approvalAbove: given.approval_above_usd !== undefined,
    });
    const parentAllowance = parent.allowance_micros === null ? null : Number(parent.allowance_micros);
    const allowance = allowanceMicros ?? parentAllowance;
    const expiresAt = input.expires_in_seconds === undefined ? parent.expires_at : new Date(now.getTime() + input.expires_in_seconds * 1000).toISOString();
    const wider = widerThanParent(
      { permissions: parent.permissions.split(",") as Permission[], controls: parentControls, allowanceMicros: parentAllowance, expiresAt: parent.expires_at },
      { permissions, controls, allowanceMicros: allowance, expiresAt },
    );
    if (wider) throw forbidden("token_wider_than_parent", `A child token may not be wider than this token: ${wider}. Narrow that field, or leave it out to inherit this token's.`);
    // What the check settled goes into the row written next, in the same transaction.
    return { spending_controls: controlsColumn(isEmptyControls(controls) ? null : controls), expires_at: expiresAt, allowance_micros: allowance };
  });
  const row = (await ctx.ledger.tokens.get(id))!;
  return { ...(await withSpent(ctx, [row]))[0]!, token: secret };
}

/** The calling token's descendants, oldest first, each with what it and its own descendants spent. */
export async function listChildTokens(ctx: SpendingContext, principal: Principal) {
  return { data: await withSpent(ctx, await ctx.ledger.tokens.descendantsOf(principal.tokenId, CHILD_TOKENS_LIST_MAX)) };
}

/** Revokes a descendant of the calling token and, at once, every token below it; audited with the caller as actor. */
export async function revokeChildToken(ctx: SpendingContext, principal: Principal, id: string, ip: string | null = null) {
  await requireDescendant(ctx, principal, id);
  await revokeToken(ctx, id, await callerActor(ctx, principal, ip));
  return (await withSpent(ctx, [(await ctx.ledger.tokens.get(id))!]))[0]!;
}

/** A descendant's limits, as its own `GET /v1/limits` answers them. */
export async function getChildTokenLimits(ctx: SpendingContext, principal: Principal, id: string) {
  await requireDescendant(ctx, principal, id);
  return getTokenLimits(ctx, id);
}

/** The audit log's actor for the calling token: its id, and its name (or display prefix) as it is now. */
async function callerActor(ctx: Pick<SpendingContext, "ledger">, principal: Principal, ip: string | null): Promise<Actor> {
  const t = await ctx.ledger.tokens.get(principal.tokenId);
  return tokenActor({ id: principal.tokenId, name: t?.name ?? null, display_prefix: t?.display_prefix ?? "" }, ip);
}

async function requireDescendant(ctx: SpendingContext, principal: Principal, id: string): Promise<void> {
  // Another branch's token, the caller itself or its ancestors answer as unknown: a token sees only below itself.
  if (!(await ctx.ledger.tokens.isDescendant(principal.tokenId, id))) {
    throw notFound("token_not_found", `No token below this one has the id ${id.slice(0, 80)}. GET /v1/tokens lists this token's descendants.`);
  }
}

/** Tokens in their JSON shape, each with `spent_usd`: its all-time spend, its descendants' payments included. */
async function withSpent(ctx: SpendingContext, rows: ListedTokenRow[]) {
  const now = ctx.clock().toISOString();
  const spent = await ctx.ledger.payments.windowSpending(rows.map((r) => ({ scope: "token" as const, scopeId: r.id, kind: "all_time", start: "all", projectId: r.project_id })));
  return rows.map((r, i) => ({ ...tokenJson(r, now), spent_usd: microsToUsd(spent[i]!) }));
}

function usdMicros(value: number): number {
  const parsed = parseDecimalAmount(value, 6);
  if (!parsed.ok) throw badRequest("invalid_request", `allowance_usd ${parsed.reason}.`);
  return parsed.units;
}
