/**
 * Spending controls, as the ledger's hold judges them. A token and its project may each carry
 * controls; a payment must pass both (the stricter wins). Static rules — rails, recipients, the
 * per-payment cap and the approval threshold — are judged here, in pure functions; the windows
 * (daily, weekly, monthly, all-time) are counter rows keyed by (scope, kind, window start), judged and
 * moved in the same write as the balance's debit (ledger/payments.ts, and aw_hold_batch on PostgreSQL). A window
 * rolls over by itself: a new start is a new row. A counter is a cache of the ledger: a hold judged by
 * a window without a row first writes the sum of that window's payments (so a limit set mid-window
 * counts what was already spent), and every hold, with controls or none, adds its amount to each
 * existing counter of its windows (`countedWindows`), so an existing row stays equal to that sum.
 *
 * Amounts are payment amounts in micro-USDC (what reaches the payee), never the fee.
 */
import { createHmac } from "node:crypto";
import { type DomainError, forbidden } from "./errors.ts";

export const INTERVALS = ["per_payment", "daily", "weekly", "monthly", "all_time"] as const;
export type Interval = (typeof INTERVALS)[number];
export type WindowKind = Exclude<Interval, "per_payment">;
export const RAILS = ["x402", "usdc_transfer", "fiat"] as const;
export type SpendRail = (typeof RAILS)[number];

/** Controls as stored (JSON in `api_tokens.spending_controls` / `projects.spending_controls`). */
export type SpendingControls = {
  limits: { interval: Interval; amountMicros: number }[];
  /** Recipient keys (recipientKey below); null: any recipient. */
  allowedRecipients: string[] | null;
  blockedRecipients: string[];
  /** null: every rail. */
  allowedRails: SpendRail[] | null;
  /** USDC and fiat payments above this wait for a person; x402 ones are refused. null: never. */
  approvalAboveMicros: number | null;
};

export type Scope = "token" | "project";

/**
 * A token above the paying one (its parent, the parent's parent, …) as a hold judges it: a child's payment
 * must pass every ancestor's controls and fit every ancestor's windows and allowance too (nested budgets).
 */
export type AncestorControls = { tokenId: string; name: string | null; controls: SpendingControls | null; allowanceMicros: number | null };

/** The controls that apply to one hold, as the token lookup read them at authentication. */
export type HoldControls = {
  tokenId: string;
  token: SpendingControls | null;
  project: SpendingControls | null;
  /** The most the paying token (with its descendants) may ever spend; judged as its all_time window. */
  allowanceMicros?: number | null;
  /** The paying token's ancestors, nearest first. */
  ancestors?: AncestorControls[];
  /** The payment's recipient as a key (recipientKey below). */
  recipientKey: string;
};

/**
 * One window counter a hold moves: its row's key and the limit it may not pass; `owner` names an ancestor
 * token's window in its refusal, and `allowance` marks an all_time window that is a token's allowance.
 */
export type SpendWindow = { scope: Scope; scopeId: string; kind: WindowKind; start: string; limitMicros: number; owner?: string; allowance?: boolean };

export type RefusalCode = "spending_limit_exceeded" | "recipient_not_allowed" | "rail_not_allowed" | "approval_required";

/** The rule a `spending_limit_exceeded` refusal names: the per-payment cap, a window, or a token's allowance (its all_time window). */
export type LimitRule = "per_payment" | WindowKind | "allowance";

/**
 * What a limit refusal measured, in micro-USDC, kept with it in the refusal log so that a reader (the console)
 * words it from these numbers, never from the detail's prose: the rule, whose rule it is (the paying token,
 * one of its ancestors, or the project: `ownerId` is that token's or project's id), the limit, what its window
 * had spent and what remained (null for per_payment, and for a payment above the whole limit, whose counter
 * is not read), and the amount asked.
 */
export type LimitBreach = {
  rule: LimitRule;
  level: "token" | "ancestor" | "project";
  ownerId: string;
  limitMicros: number;
  spentMicros: number | null;
  remainingMicros: number | null;
  amountMicros: number;
};

/** A payment the controls refuse: its code, its detail for the caller and, for a limit, what the limit measured. */
export type Refusal = { code: RefusalCode; detail: string; limit?: LimitBreach };

/** How a hold's controls judge it before any counter moves. */
export type StaticJudgement = { kind: "refused"; refusal: Refusal } | { kind: "ok"; windows: SpendWindow[]; approval: boolean };

export function parseControls(text: string | null | undefined): SpendingControls | null {
  if (!text) return null;
  return JSON.parse(text) as SpendingControls;
}

export function isEmptyControls(c: SpendingControls | null): boolean {
  return !c || (c.limits.length === 0 && c.allowedRecipients === null && c.blockedRecipients.length === 0 && c.allowedRails === null && c.approvalAboveMicros === null);
}

/** The start of the UTC calendar window holding `at`: a day at 00:00, a week on Monday, a month on the 1st. */
export function windowStart(kind: WindowKind, at: Date): string {
  if (kind === "all_time") return "all";
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), kind === "monthly" ? 1 : at.getUTCDate()));
  if (kind === "weekly") d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d.toISOString();
}

export const WINDOW_KINDS: readonly WindowKind[] = ["daily", "weekly", "monthly", "all_time"];

/** A window counter's key, as payments store the list of theirs: [token or project id, kind, start]. */
export type WindowKey = [scopeId: string, kind: WindowKind, start: string];

/**
 * Every window counter a payment made at `at` belongs to: each kind, of its token and that token's
 * ancestors (`tokenIds`, none when the token is not known) and of its project. The hold adds the amount
 * to those that exist; a failure or reversal takes it back (a trigger).
 */
export function countedWindows(tokenIds: readonly string[], projectId: string, at: Date): WindowKey[] {
  // The same starts for every scope: computed once, not once per scope.
  const starts = WINDOW_KINDS.map((kind) => [kind, windowStart(kind, at)] as const);
  return [...tokenIds, projectId].flatMap((id) => starts.map(([kind, start]): WindowKey => [id, kind, start]));
}

/** The payments a window holds: `created_at` in [from, to) (ISO 8601 strings compare in time order). */
export function windowBounds(kind: WindowKind, start: string): { from: string; to: string } {
  return kind === "all_time" ? { from: "", to: "~" } : { from: start, to: windowEnd(kind, start)! };
}

/** When the window starting at `start` ends (null for all_time). */
export function windowEnd(kind: WindowKind, start: string): string | null {
  if (kind === "all_time") return null;
  const d = new Date(start);
  if (kind === "daily") d.setUTCDate(d.getUTCDate() + 1);
  else if (kind === "weekly") d.setUTCDate(d.getUTCDate() + 7);
  else d.setUTCMonth(d.getUTCMonth() + 1);
  return d.toISOString();
}

/** "1.500000 USD" for messages; amounts are micro-USD. */
export function usd(micros: number): string {
  return `${(BigInt(micros) / 1_000_000n).toString()}.${(BigInt(micros) % 1_000_000n).toString().padStart(6, "0")} USD`;
}

const WINDOW_NAME: Record<WindowKind, string> = { daily: "daily", weekly: "weekly", monthly: "monthly", all_time: "all-time" };

function windowText(kind: WindowKind, start: string): string {
  return kind === "all_time" ? "in all" : `in the window ${start} – ${windowEnd(kind, start)} (UTC)`;
}

/**
 * The refusal of a window that the payment would take past its limit; `spentMicros` null: the payment is
 * above the whole limit, and the window's counter was not read.
 */
export function windowRefusal(w: SpendWindow, spentMicros: number | null, amountMicros: number): Refusal {
  const rule = `the ${w.owner ?? w.scope}'s ${w.allowance ? "allowance" : `${WINDOW_NAME[w.kind]} limit`}`;
  const limit = { rule: w.allowance ? "allowance" : w.kind, level: levelOf(w), ownerId: w.scopeId, limitMicros: w.limitMicros, amountMicros } as const;
  if (spentMicros === null) {
    return {
      code: "spending_limit_exceeded",
      detail: `Spending limit exceeded: ${rule} is ${usd(w.limitMicros)} and this payment is ${usd(amountMicros)}, more than the whole limit. Pay at most what remains of it (GET /v1/limits shows it), or ask an operator to raise the limit.`,
      limit: { ...limit, spentMicros: null, remainingMicros: null },
    };
  }
  const remaining = Math.max(0, w.limitMicros - spentMicros);
  return {
    code: "spending_limit_exceeded",
    detail: `Spending limit exceeded: ${rule} is ${usd(w.limitMicros)}; spent ${usd(spentMicros)} ${windowText(w.kind, w.start)}, remaining ${usd(remaining)}, and this payment is ${usd(amountMicros)}. Pay at most the remaining amount, wait for the next window, or ask an operator to raise the limit (GET /v1/limits shows them).`,
    limit: { ...limit, spentMicros, remainingMicros: remaining },
  };
}

/**
 * A window's verdict on a payment of `amountMicros` when `spentMicros` is counted in it already: the
 * refusal if the payment would take it past its limit. The hold judges every limited window by this (in
 * its write), and a quote by the same rule over the counters as they stand.
 */
export function windowVerdict(w: SpendWindow, spentMicros: number, amountMicros: number): Refusal | undefined {
  return spentMicros + amountMicros > w.limitMicros ? windowRefusal(w, spentMicros, amountMicros) : undefined;
}

/**
 * Judges the static rules of both scopes and lists the windows the hold must move. The block-list
 * always wins; with an allow-list, anything not on it is refused; per_payment and every window's
 * limit must each cover the amount on its own (a window's counter is judged in the hold's write).
 */
export function judgeStatic(c: HoldControls, projectId: string, rail: SpendRail, amountMicros: number, now: Date): StaticJudgement {
  const windows: SpendWindow[] = [];
  let approval = false;
  for (const level of levelsOf(c, projectId)) {
    const { scope, controls, who, owner } = level;
    if (controls.allowedRails && !controls.allowedRails.includes(rail)) {
      return refused("rail_not_allowed", `Rail not allowed: ${who} may pay by ${controls.allowedRails.join(", ") || "no rail"}, not ${rail}. Use an allowed rail or ask an operator to change the token's allowed_rails.`);
    }
    if (controls.blockedRecipients.some((k) => recipientMatches(k, c.recipientKey))) {
      return refused("recipient_not_allowed", `Recipient not allowed: ${displayRecipient(c.recipientKey)} is on ${who}'s blocked_recipients list. Pay another recipient.`);
    }
    if (controls.allowedRecipients && !controls.allowedRecipients.some((k) => recipientMatches(k, c.recipientKey))) {
      return refused("recipient_not_allowed", `Recipient not allowed: ${displayRecipient(c.recipientKey)} is not on ${who}'s allowed_recipients list (${controls.allowedRecipients.map(displayRecipient).join(", ") || "empty"}). Pay an allowed recipient or ask an operator to add it.`);
    }
    for (const l of limitsOf(controls, level.allowanceMicros)) {
      if (l.interval === "per_payment") {
        if (amountMicros > l.amountMicros) {
          const limit: LimitBreach = { rule: "per_payment", level: levelOf(level), ownerId: level.id, limitMicros: l.amountMicros, spentMicros: null, remainingMicros: null, amountMicros };
          return { kind: "refused", refusal: { code: "spending_limit_exceeded", detail: `Spending limit exceeded: ${who}'s per_payment limit is ${usd(l.amountMicros)} and this payment is ${usd(amountMicros)}. Pay at most ${usd(l.amountMicros)} at a time.`, limit } };
        }
        continue;
      }
      const w: SpendWindow = { scope, scopeId: level.id, kind: l.interval, start: windowStart(l.interval, now), limitMicros: l.amountMicros, ...(owner ? { owner } : {}), ...(l.allowance ? { allowance: true } : {}) };
      // A payment larger than the whole limit can never fit; its counter is not even read.
      if (amountMicros > l.amountMicros) return { kind: "refused", refusal: windowRefusal(w, null, amountMicros) };
      windows.push(w);
    }
    if (controls.approvalAboveMicros !== null && amountMicros > controls.approvalAboveMicros) {
      if (rail === "x402") {
        return refused("approval_required", `Approval required: ${who} needs a person's approval for payments above ${usd(controls.approvalAboveMicros)}, and this x402 payment is ${usd(amountMicros)}; an x402 request cannot wait for a person. Pay at most ${usd(controls.approvalAboveMicros)} or use a token without this threshold.`);
      }
      approval = true;
    }
  }
  return { kind: "ok", windows, approval };
}

/** Where a window shown by `GET /v1/limits` comes from: the level that set it, and whether it is an allowance. */
export type ShownWindow = SpendWindow & { level: "token" | "ancestor" | "project" };

/**
 * Every window counter a hold by this token moves, in the order the hold judges them (the token, each
 * ancestor nearest first, the project), per_payment limits aside: what `GET /v1/limits` shows, so it shows
 * exactly the windows and allowances that can refuse a payment.
 */
export function windowsOfLevels(c: Omit<HoldControls, "recipientKey">, projectId: string, now: Date): ShownWindow[] {
  return levelsOf(c, projectId).flatMap((level, i) =>
    limitsOf(level.controls, level.allowanceMicros)
      .filter((l) => l.interval !== "per_payment")
      .map((l) => ({
        scope: level.scope,
        scopeId: level.id,
        kind: l.interval as WindowKind,
        start: windowStart(l.interval as WindowKind, now),
        limitMicros: l.amountMicros,
        level: level.scope === "project" ? ("project" as const) : i === 0 ? ("token" as const) : ("ancestor" as const),
        ...(l.allowance ? { allowance: true } : {}),
      })),
  );
}

type Level = { scope: Scope; id: string; who: string; owner?: string; controls: SpendingControls; allowanceMicros: number | null };

/** What a hold is judged by, in order: the paying token, each of its ancestors (nearest first), the project. */
function levelsOf(c: Omit<HoldControls, "recipientKey">, projectId: string): Level[] {
  const empty: SpendingControls = { limits: [], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };
  const levels: Level[] = [{ scope: "token", id: c.tokenId, who: "this token", controls: c.token ?? empty, allowanceMicros: c.allowanceMicros ?? null }];
  for (const a of c.ancestors ?? []) {
    const owner = `ancestor token ${a.name === null ? a.tokenId : `"${a.name}" (${a.tokenId})`}`;
    levels.push({ scope: "token", id: a.tokenId, who: `its ${owner}`, owner, controls: a.controls ?? empty, allowanceMicros: a.allowanceMicros });
  }
  if (c.project) levels.push({ scope: "project", id: projectId, who: "this project", controls: c.project, allowanceMicros: null });
  return levels;
}

/** Whose rule a level's (or its window's) is: an owner names an ancestor token. */
function levelOf(x: { scope: Scope; owner?: string }): LimitBreach["level"] {
  return x.scope === "project" ? "project" : x.owner ? "ancestor" : "token";
}

/** A level's limits with its allowance as its all_time limit (the lower of the two, when both are set). */
function limitsOf(controls: SpendingControls, allowanceMicros: number | null): { interval: Interval; amountMicros: number; allowance?: boolean }[] {
  if (allowanceMicros === null) return controls.limits;
  const allTime = controls.limits.find((l) => l.interval === "all_time");
  if (allTime && allTime.amountMicros <= allowanceMicros) return controls.limits;
  return [...controls.limits.filter((l) => l.interval !== "all_time"), { interval: "all_time", amountMicros: allowanceMicros, allowance: true }];
}

function refused(code: RefusalCode, detail: string): StaticJudgement {
  return { kind: "refused", refusal: { code, detail } };
}

// -------------------------------------------------------------------------------------------------
// Recipients as keys: `host:api.example.com`, `host:*.example.com`, `addr:0xabc…` (lowercase),
// `bank:<routing>:<last four>:<keyed hash of routing and account>` — no full account number is kept.

/** The key of a host, an EVM address, or a bank account (with the deployment's hash key). */
export function recipientKey(r: { host: string } | { address: string } | { routingNumber: string; accountNumber: string }, bankKey: Uint8Array): string {
  if ("host" in r) return `host:${r.host.toLowerCase().replace(/\.$/, "")}`;
  if ("address" in r) return `addr:${r.address.toLowerCase()}`;
  const digest = createHmac("sha256", bankKey).update(`${r.routingNumber}:${r.accountNumber}`).digest("hex").slice(0, 32);
  return `bank:${r.routingNumber}:${r.accountNumber.slice(-4)}:${digest}`;
}

/** Whether a listed key covers a payment's key: equal, or `host:*.example.com` for any subdomain of example.com. */
export function recipientMatches(listed: string, key: string): boolean {
  if (listed === key) return true;
  if (listed.startsWith("host:*.") && key.startsWith("host:")) return key.endsWith(listed.slice("host:*".length)) && key.length > listed.length - 1;
  return false;
}

/** A key as people see it: the host, the address, or the bank account by routing number and last four. */
export function displayRecipient(key: string): string {
  const [kind, ...rest] = key.split(":");
  if (kind === "host" || kind === "addr") return rest.join(":");
  if (kind === "bank") return `bank account ••••${rest[1]} (routing ${rest[0]})`;
  return key;
}

// -------------------------------------------------------------------------------------------------
// The controls a payment's hold is judged by, and the answer to a refusal.

/** The spending controls of a token, of its ancestors and of its project, as read with the token at authentication. */
export type PrincipalControls = { token: SpendingControls | null; project: SpendingControls | null; allowanceMicros?: number | null; ancestors?: AncestorControls[] };

export type RecipientOf = { rail: "x402"; url: string } | { rail: "usdc_transfer"; address: string } | { rail: "fiat"; routingNumber: string; accountNumber: string };

/** The controls a payment's hold is judged by; undefined when neither the token nor its project has any. */
export function holdControlsOf(
  p: { tokenId: string; controls?: PrincipalControls },
  recipient: RecipientOf,
  opts: { bankKey: Uint8Array; approvalTimeoutMs: number },
): (HoldControls & { approvalTimeoutMs: number }) | undefined {
  const c = p.controls;
  const ancestorsBind = (c?.ancestors ?? []).some((a) => a.allowanceMicros !== null || !isEmptyControls(a.controls));
  if (!c || (isEmptyControls(c.token) && isEmptyControls(c.project) && (c.allowanceMicros ?? null) === null && !ancestorsBind)) return undefined;
  const key =
    recipient.rail === "x402"
      ? recipientKey({ host: new URL(recipient.url).hostname }, opts.bankKey)
      : recipient.rail === "usdc_transfer"
        ? recipientKey({ address: recipient.address }, opts.bankKey)
        : recipientKey({ routingNumber: recipient.routingNumber, accountNumber: recipient.accountNumber }, opts.bankKey);
  return { tokenId: p.tokenId, token: c.token, project: c.project, allowanceMicros: c.allowanceMicros ?? null, ancestors: c.ancestors ?? [], recipientKey: key, approvalTimeoutMs: opts.approvalTimeoutMs };
}

/** A refusal as the API answers it: 403 with its code and detail. */
export function refusalError(r: Refusal): DomainError {
  return forbidden(r.code, r.detail);
}
