/**
 * Spending controls at the edge: the wire form (admin API, CLI, `GET /v1/limits`) to and from the
 * stored form (ledger/spending.ts), the controls a payment's hold is judged by, and the 403 a refusal
 * becomes. The judging itself happens in the ledger's hold.
 */
import { AccountNumber, type LimitScope, RoutingNumber, limits } from "@agentwallet/api";
import type { Clock } from "../ids.ts";
import type { PaymentStore, ProjectStore, TokenStore } from "../ledger/ports.ts";
import type { Principal } from "../domain/principal.ts";
import { badRequest, notFound } from "../domain/errors.ts";
import { isAddress } from "viem";
import {
  INTERVALS,
  type RecipientOf,
  type Interval,
  RAILS,
  type SpendRail,
  type HoldControls,
  type PrincipalControls,
  type SpendingControls,
  type WindowKind,
  displayRecipient,
  holdControlsOf,
  parseControls,
  isEmptyControls,
  recipientKey,
  usd,
  windowEnd,
  windowStart,
  windowsOfLevels,
} from "../domain/spending.ts";
import { parseDecimalAmount } from "../money.ts";
import type { Actor } from "../domain/audit.ts";

/** Bounds of one set of controls (the wire contract's, packages/api/src/limits.ts). */
export const CONTROLS_RECIPIENTS_MAX = limits.controlsRecipientsMax;
export const CONTROLS_AMOUNT_USD_MAX = limits.controlsAmountUsdMax;

/** What these functions use of the application's context (declared here, by its consumer). */
export type SpendingContext = { ledger: { payments: PaymentStore; tokens: TokenStore; projects: ProjectStore }; clock: Clock; config: { spending: { approvalTimeoutMs: number } }; recipientHashKey?: BankKey };

/** The recipient hash key, or how to load it when a bank account first needs it (the CLI loads it lazily). */
export type BankKey = Uint8Array | (() => Uint8Array);

export type WireRecipient = string | { routing_number: string; account_number: string };
export type WireControls = {
  spending_limits?: { amount_usd: number; interval: Interval }[];
  allowed_recipients?: WireRecipient[] | null;
  blocked_recipients?: WireRecipient[];
  allowed_rails?: SpendRail[] | null;
  approval_above_usd?: number | null;
};

/**
 * The key bank accounts are hashed with. deps.ts derives it from the master key source; a context
 * built without one (some tests) uses a fixed key, which still never shows an account number back.
 */
export function bankKeyOf(ctx: Pick<SpendingContext, "recipientHashKey">): Uint8Array {
  const key = ctx.recipientHashKey;
  return typeof key === "function" ? key() : (key ?? new TextEncoder().encode("agentwallet recipient hash (no key configured)"));
}

function amountMicros(value: unknown, field: string): number {
  if (typeof value !== "number" || value > CONTROLS_AMOUNT_USD_MAX) throw badRequest("invalid_request", `${field} must be a number of US dollars up to ${CONTROLS_AMOUNT_USD_MAX}.`);
  const parsed = parseDecimalAmount(value, 6);
  if (!parsed.ok) throw badRequest("invalid_request", `${field} ${parsed.reason}.`);
  return parsed.units;
}

/** A recipient as written by an operator → its key: a host (`api.example.com`, `*.example.com`), an address, or a bank account. */
export function parseRecipient(r: WireRecipient, bankKey: BankKey, field: string): string {
  const key = () => (typeof bankKey === "function" ? bankKey() : bankKey);
  if (typeof r === "object" && r !== null) return bankKeyOfAccount(r.routing_number, r.account_number, key, field);
  if (typeof r !== "string" || r.length === 0 || r.length > 253) throw badRequest("invalid_request", `${field}: each recipient is a host, an EVM address or {routing_number, account_number}.`);
  const text = r.trim();
  if (/^0x/i.test(text)) {
    if (!isAddress(text, { strict: false })) throw badRequest("invalid_request", `${field}: "${text.slice(0, 50)}" is not an EVM address (0x and 40 hexadecimal characters).`);
    return recipientKey({ address: text }, new Uint8Array(0));
  }
  const bank = /^bank:([^:]*):(.*)$/.exec(text);
  if (bank) return bankKeyOfAccount(bank[1], bank[2], key, field);
  const host = text.toLowerCase();
  if (!/^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(host) && !/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) {
    throw badRequest("invalid_request", `${field}: "${text.slice(0, 80)}" is not a host name (api.example.com or *.example.com), an EVM address, or bank:ROUTING:ACCOUNT.`);
  }
  return recipientKey({ host }, new Uint8Array(0));
}

/** A listed bank account's key, its numbers checked by the very schemas a payment's recipient is (packages/api). */
function bankKeyOfAccount(routing: unknown, account: unknown, key: () => Uint8Array, field: string): string {
  for (const [name, schema, value] of [["routing_number", RoutingNumber, routing], ["account_number", AccountNumber, account]] as const) {
    const parsed = schema.safeParse(value);
    if (!parsed.success) throw badRequest("invalid_request", `${field}: ${name} ${parsed.error.issues[0]?.message ?? "is invalid"}${name === "account_number" ? " (4 to 34 characters)" : ""}.`);
  }
  return recipientKey({ routingNumber: routing as string, accountNumber: account as string }, key());
}

function recipients(list: unknown, bankKey: BankKey, field: string): string[] {
  if (!Array.isArray(list)) throw badRequest("invalid_request", `${field} must be a list.`);
  if (list.length > CONTROLS_RECIPIENTS_MAX) throw badRequest("invalid_request", `${field} may hold at most ${CONTROLS_RECIPIENTS_MAX} recipients.`);
  return [...new Set(list.map((r, i) => parseRecipient(r as WireRecipient, bankKey, `${field}[${i}]`)))];
}

/**
 * Wire controls → stored controls, merged over `base` (fields not given keep their value: an update
 * changes only what it names). One limit per interval: the last given wins.
 */
export function parseControlsInput(input: WireControls, bankKey: BankKey, base: SpendingControls | null = null): SpendingControls {
  const known = new Set(["spending_limits", "allowed_recipients", "blocked_recipients", "allowed_rails", "approval_above_usd"]);
  const unknown = Object.keys(input).filter((k) => !known.has(k));
  if (unknown.length) throw badRequest("invalid_request", `Unknown control field(s): ${unknown.join(", ")}. Known: ${[...known].join(", ")}.`);
  const c: SpendingControls = base ? structuredClone(base) : { limits: [], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };
  if (input.spending_limits !== undefined) {
    if (!Array.isArray(input.spending_limits) || input.spending_limits.length > INTERVALS.length * 2) throw badRequest("invalid_request", "spending_limits must be a list of {amount_usd, interval}.");
    const byInterval = new Map<Interval, number>();
    input.spending_limits.forEach((l, i) => {
      if (!INTERVALS.includes(l?.interval)) throw badRequest("invalid_request", `spending_limits[${i}].interval must be one of ${INTERVALS.join(", ")}.`);
      byInterval.set(l.interval, amountMicros(l.amount_usd, `spending_limits[${i}].amount_usd`));
    });
    c.limits = INTERVALS.filter((i) => byInterval.has(i)).map((interval) => ({ interval, amountMicros: byInterval.get(interval)! }));
  }
  if (input.allowed_recipients !== undefined) c.allowedRecipients = input.allowed_recipients === null ? null : recipients(input.allowed_recipients, bankKey, "allowed_recipients");
  if (input.blocked_recipients !== undefined) c.blockedRecipients = recipients(input.blocked_recipients ?? [], bankKey, "blocked_recipients");
  if (input.allowed_rails !== undefined) {
    if (input.allowed_rails !== null && (!Array.isArray(input.allowed_rails) || input.allowed_rails.some((r) => !RAILS.includes(r)))) {
      throw badRequest("invalid_request", `allowed_rails must be a list of ${RAILS.join(", ")} (or null for all).`);
    }
    c.allowedRails = input.allowed_rails === null ? null : [...new Set(input.allowed_rails)];
  }
  if (input.approval_above_usd !== undefined) c.approvalAboveMicros = input.approval_above_usd === null ? null : amountMicros(input.approval_above_usd, "approval_above_usd");
  return c;
}

/**
 * Changes a token's controls (updateControls' rule, as the CLI's `tokens update` and the admin API apply it);
 * the next request with the token is judged by them. False if there is no such token.
 */
export async function updateTokenControls(ctx: SpendingContext, tokenId: string, input: WireControls, actor?: Actor): Promise<boolean> {
  if (!(await ctx.ledger.tokens.get(tokenId))) return false;
  await updateControls(ctx, "token", tokenId, input, actor);
  return true;
}

/** "10.5" for 10_500_000 micro-USD: a JSON number for the wire (exact for up to 6 decimals). */
export function microsToUsd(micros: number): number {
  return Number(usd(micros).replace(" USD", ""));
}

export function renderControls(c: SpendingControls | null) {
  if (!c) return null;
  return {
    spending_limits: c.limits.map((l) => ({ amount_usd: microsToUsd(l.amountMicros), interval: l.interval })),
    allowed_recipients: c.allowedRecipients?.map(displayRecipient) ?? null,
    blocked_recipients: c.blockedRecipients.map(displayRecipient),
    allowed_rails: c.allowedRails,
    approval_above_usd: c.approvalAboveMicros === null ? null : microsToUsd(c.approvalAboveMicros),
  };
}

/** Stored form of controls for a column: null when they restrict nothing. */
export function controlsColumn(c: SpendingControls | null): string | null {
  return isEmptyControls(c) ? null : JSON.stringify(c);
}

/** The controls a payment's hold is judged by (domain/spending.ts), with this deployment's key and approval timeout. */
export function holdControls(ctx: SpendingContext, principal: Principal, recipient: RecipientOf) {
  return holdControlsOf(principal, recipient, { bankKey: bankKeyOf(ctx), approvalTimeoutMs: ctx.config.spending.approvalTimeoutMs });
}

/**
 * `GET /v1/limits`: the token's and the project's controls and, per window a hold by this token moves (its
 * own, its allowance, each ancestor's and the project's: domain/spending.ts `windowsOfLevels`), what is spent
 * and what remains now, read from the counters the hold moves.
 */
export async function getLimits(ctx: SpendingContext, principal: Pick<Principal, "tokenId" | "projectId" | "controls">) {
  return limitsOf(ctx, { tokenId: principal.tokenId, projectId: principal.projectId, token: principal.controls?.token ?? null, project: principal.controls?.project ?? null, allowanceMicros: principal.controls?.allowanceMicros ?? null, ancestors: principal.controls?.ancestors ?? [] });
}

/** The admin API's view of one token's limits: the same answer as that token's own `GET /v1/limits`. */
export async function getTokenLimits(ctx: SpendingContext, tokenId: string) {
  const { projectId, controls } = await tokenControls(ctx, tokenId);
  return getLimits(ctx, { tokenId, projectId, controls });
}

/** One token's controls as authentication reads them: its own, its project's, its allowance and its ancestors'. */
export async function tokenControls(ctx: Pick<SpendingContext, "ledger">, tokenId: string): Promise<{ projectId: string; controls: PrincipalControls }> {
  const token = await ctx.ledger.tokens.get(tokenId);
  if (!token) throw notFound("token_not_found", `There is no token with id ${tokenId.slice(0, 80)}.`);
  const project = await ctx.ledger.projects.get(token.project_id);
  const ancestors = token.parent_id === null ? [] : await ctx.ledger.tokens.ancestorsOf(tokenId);
  return {
    projectId: token.project_id,
    controls: {
      token: parseControls(token.spending_controls),
      project: parseControls(project?.spending_controls ?? null),
      allowanceMicros: micros(token.allowance_micros),
      ancestors: ancestors.map((a) => ({ tokenId: a.id, name: a.name, controls: parseControls(a.spending_controls), allowanceMicros: micros(a.allowance_micros) })),
    },
  };
}

const micros = (column: number | bigint | string | null): number | null => (column === null ? null : Number(column));

const SCOPE_OF = { token: "token", ancestor: "ancestor", project: "project" } as const;

async function limitsOf(ctx: SpendingContext, of: Omit<HoldControls, "recipientKey"> & { projectId: string }) {
  const windows = windowsOfLevels(of, of.projectId, ctx.clock());
  const spent = await ctx.ledger.payments.windowSpending(windows.map((w) => ({ scope: w.scope, scopeId: w.scopeId, kind: w.kind, start: w.start, projectId: of.projectId })));
  return {
    token: renderControls(of.token),
    project: renderControls(of.project),
    windows: windows.map((w, i) => {
      const s = spent[i]!;
      const scope: LimitScope = w.allowance ? (w.level === "token" ? "allowance" : "ancestor_allowance") : SCOPE_OF[w.level];
      return {
        scope,
        ...(w.level === "project" ? {} : { token_id: w.scopeId }),
        interval: w.kind,
        window_start: w.kind === "all_time" ? null : w.start,
        window_end: windowEnd(w.kind, w.start),
        limit_usd: microsToUsd(w.limitMicros),
        spent_usd: microsToUsd(s),
        remaining_usd: microsToUsd(Math.max(0, w.limitMicros - s)),
      };
    }),
  };
}

/**
 * Changes the spending controls of a token or a project: the fields given replace theirs, the others keep
 * their value (null clears a list or the threshold; `spending_limits: []` removes every limit). Returns
 * the controls as they are now. The CLI's `tokens update` / `projects limits` and the admin API both call it.
 */
export async function updateControls(ctx: SpendingContext, scope: "token" | "project", id: string, input: WireControls, actor?: Actor) {
  const stored = scope === "token" ? (await ctx.ledger.tokens.get(id))?.spending_controls : (await ctx.ledger.projects.get(id))?.spending_controls;
  if (stored === undefined) throw notFound(`${scope}_not_found`, `There is no ${scope} with id ${id.slice(0, 80)}.`);
  const column = controlsColumn(parseControlsInput(input, ctx.recipientHashKey ?? bankKeyOf(ctx), parseControls(stored)));
  await ctx.ledger.tokens.setSpendingControls(scope, id, column, actor);
  return renderControls(parseControls(column));
}

/** Bounds of the refusal list: the log itself keeps the newest REFUSALS_KEPT_MAX (ledger/payments.ts). */
export const REFUSALS_PAGE_DEFAULT = 50;
export const REFUSALS_PAGE_MAX = 1_000;

/** Payment attempts the controls refused, newest first, of one project or all. */
export async function listRefusals(ctx: Pick<SpendingContext, "ledger">, opts: { projectId?: string; limit?: number }) {
  const limit = Math.min(REFUSALS_PAGE_MAX, Math.max(1, Math.trunc(opts.limit ?? REFUSALS_PAGE_DEFAULT) || REFUSALS_PAGE_DEFAULT));
  const rows = await ctx.ledger.payments.listRefusals({ projectId: opts.projectId, limit });
  return rows.map((r) => ({
    project_id: r.project_id,
    token_id: r.token_id,
    code: r.code,
    detail: r.detail,
    rail: r.rail,
    recipient: r.recipient,
    amount_usd: r.amount_micros === null ? null : microsToUsd(Number(r.amount_micros)),
    created_at: r.created_at,
  }));
}
