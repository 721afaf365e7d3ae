/**
 * Spending controls at the edge: the wire form (admin API, CLI, `GET /v1/limits`) to and from the
 * stored form (ledger/spending.ts), the controls a payment's hold is judged by, and the 403 a refusal
 * becomes. The judging itself happens in the ledger's hold.
 */
import type { Clock } from "../ids.ts";
import type { Ledger } from "../ledger/store.ts";
import type { Principal } from "../domain/principal.ts";
import { badRequest } from "../domain/errors.ts";
import { isAddress } from "viem";
import {
  INTERVALS,
  type RecipientOf,
  type Interval,
  RAILS,
  type SpendRail,
  type SpendingControls,
  type WindowKind,
  displayRecipient,
  holdControlsOf,
  isEmptyControls,
  parseControls,
  recipientKey,
  usd,
  windowEnd,
  windowStart,
} from "../domain/spending.ts";
import { parseDecimalAmount } from "../money.ts";

/** Bounds of one set of controls. */
export const CONTROLS_RECIPIENTS_MAX = 100;
export const CONTROLS_AMOUNT_USD_MAX = 1_000_000_000;

/** What these functions use of the application's context (declared here, by its consumer). */
export type SpendingContext = { ledger: Ledger; clock: Clock; config: { spending: { approvalTimeoutMs: number } }; recipientHashKey?: Uint8Array };

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
  return ctx.recipientHashKey ?? new TextEncoder().encode("agentwallet recipient hash (no key configured)");
}

function amountMicros(value: unknown, field: string): number {
  if (typeof value !== "number" || value > CONTROLS_AMOUNT_USD_MAX) throw badRequest("invalid_request", `${field} must be a number of US dollars up to ${CONTROLS_AMOUNT_USD_MAX}.`);
  const parsed = parseDecimalAmount(value, 6);
  if (!parsed.ok) throw badRequest("invalid_request", `${field} ${parsed.reason}.`);
  return parsed.units;
}

/** A recipient as written by an operator → its key: a host (`api.example.com`, `*.example.com`), an address, or a bank account. */
export function parseRecipient(r: WireRecipient, bankKey: Uint8Array, field: string): string {
  if (typeof r === "object" && r !== null) {
    const routing = String(r.routing_number ?? "");
    const account = String(r.account_number ?? "");
    if (!/^\d{9}$/.test(routing)) throw badRequest("invalid_request", `${field}: routing_number must be 9 digits.`);
    if (!/^\d{4,17}$/.test(account)) throw badRequest("invalid_request", `${field}: account_number must be 4 to 17 digits.`);
    return recipientKey({ routingNumber: routing, accountNumber: account }, bankKey);
  }
  if (typeof r !== "string" || r.length === 0 || r.length > 253) throw badRequest("invalid_request", `${field}: each recipient is a host, an EVM address or {routing_number, account_number}.`);
  const text = r.trim();
  if (/^0x/i.test(text)) {
    if (!isAddress(text, { strict: false })) throw badRequest("invalid_request", `${field}: "${text.slice(0, 50)}" is not an EVM address (0x and 40 hexadecimal characters).`);
    return recipientKey({ address: text }, bankKey);
  }
  const bank = /^bank:(\d{9}):(\d{4,17})$/.exec(text);
  if (bank) return recipientKey({ routingNumber: bank[1]!, accountNumber: bank[2]! }, bankKey);
  const host = text.toLowerCase();
  if (!/^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/.test(host) && !/^\d{1,3}(\.\d{1,3}){3}$/.test(host)) {
    throw badRequest("invalid_request", `${field}: "${text.slice(0, 80)}" is not a host name (api.example.com or *.example.com), an EVM address, or bank:ROUTING:ACCOUNT.`);
  }
  return recipientKey({ host }, bankKey);
}

function recipients(list: unknown, bankKey: Uint8Array, field: string): string[] {
  if (!Array.isArray(list)) throw badRequest("invalid_request", `${field} must be a list.`);
  if (list.length > CONTROLS_RECIPIENTS_MAX) throw badRequest("invalid_request", `${field} may hold at most ${CONTROLS_RECIPIENTS_MAX} recipients.`);
  return [...new Set(list.map((r, i) => parseRecipient(r as WireRecipient, bankKey, `${field}[${i}]`)))];
}

/**
 * Wire controls → stored controls, merged over `base` (fields not given keep their value: an update
 * changes only what it names). One limit per interval: the last given wins.
 */
export function parseControlsInput(input: WireControls, bankKey: Uint8Array, base: SpendingControls | null = null): SpendingControls {
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
 * Changes a token's controls: the fields given replace the stored ones (parseControlsInput's rule, as the
 * CLI's `tokens update` and the admin API apply it); the next request with the token is judged by them.
 * False if there is no such token.
 */
export async function updateTokenControls(ctx: SpendingContext, tokenId: string, input: WireControls): Promise<boolean> {
  const token = await ctx.ledger.getToken(tokenId);
  if (!token) return false;
  const merged = parseControlsInput(input, bankKeyOf(ctx), parseControls(token.spending_controls));
  return ctx.ledger.setSpendingControls("token", tokenId, controlsColumn(merged));
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

/** `GET /v1/limits`: the token's and the project's controls and, per window, what is spent and what remains now. */
export async function getLimits(ctx: SpendingContext, principal: Pick<Principal, "tokenId" | "projectId" | "controls">) {
  const now = ctx.clock();
  const scopes = [
    { scope: "token" as const, id: principal.tokenId, controls: principal.controls?.token ?? null },
    { scope: "project" as const, id: principal.projectId, controls: principal.controls?.project ?? null },
  ];
  const windows = scopes.flatMap((s) =>
    (s.controls?.limits ?? [])
      .filter((l) => l.interval !== "per_payment")
      .map((l) => ({ scope: s.scope, scopeId: s.id, kind: l.interval as WindowKind, start: windowStart(l.interval as WindowKind, now), limitMicros: l.amountMicros })),
  );
  const spent = await ctx.ledger.windowSpending(windows.map((w) => ({ scopeId: w.scopeId, kind: w.kind, start: w.start })));
  return {
    token: renderControls(principal.controls?.token ?? null),
    project: renderControls(principal.controls?.project ?? null),
    windows: windows.map((w, i) => {
      const s = spent[i]!;
      return {
        scope: w.scope,
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
