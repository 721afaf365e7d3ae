/**
 * The console's Spend page: where a project's money went in the current UTC day, week or month — by agent
 * (token), by counterparty and by rail — and each limited agent's burn against its limits. The figures are
 * sums of the ledger's day counters (ledger/spendDays.ts), the very rows a limit window without its counter
 * is summed from, and a period is a limit window (domain/spending.ts `windowStart`), so an agent's amount in
 * the period is what `GET /v1/limits` counts in its window (for a token without children). The burn windows
 * are `GET /v1/limits`'s own answer for each token (spendingControls.ts `getTokenLimits`).
 */
import type { BurnWindow, Rail, SpendLine, SpendPeriod, SpendReport } from "@agentwallet/console";
import { type WindowKind, windowEnd, windowStart } from "../../domain/spending.ts";
import type { SpendDayTotal } from "../../ledger/spendDays.ts";
import type { ServiceDeps } from "../serviceDeps.ts";
import { getTokenLimits } from "../spendingControls.ts";

type SpendDeps = Pick<ServiceDeps, "ledger" | "clock" | "config" | "recipientHashKey">;

const KIND_OF: Record<SpendPeriod, WindowKind> = { day: "daily", week: "weekly", month: "monthly" };

/** Agents shown with their burn, at most (a project's tokens are few; revoked and expired ones are left out). */
const BURN_TOKENS_MAX = 50;

const RAIL_LABEL: Record<Rail, string> = { x402: "x402 (paid HTTP)", usdc_transfer: "USDC transfer", fiat: "Bank payment (fiat)" };

export async function spendReport(deps: SpendDeps, projectId: string, period: SpendPeriod): Promise<SpendReport> {
  const now = deps.clock();
  const start = windowStart(KIND_OF[period], now);
  const end = windowEnd(KIND_OF[period], start)!;
  const [totals, days, tokens] = await Promise.all([
    deps.ledger.spendDays.totals(projectId, start.slice(0, 10), end.slice(0, 10)),
    deps.ledger.spendDays.byDay(projectId, start.slice(0, 10), end.slice(0, 10)),
    deps.ledger.tokens.list(projectId),
  ]);
  const labelOf = new Map(tokens.map((t) => [t.id, t.name ? `${t.name} (${t.display_prefix}…)` : `${t.display_prefix}…`]));
  const active = tokens.filter((t) => t.revoked_at === null && (t.expires_at === null || t.expires_at > now.toISOString()));
  const burn = await Promise.all(
    active.slice(0, BURN_TOKENS_MAX).map(async (t) => {
      const limits = await getTokenLimits(deps, t.id);
      const windows = limits.windows.filter((w) => w.scope === "token" && w.interval !== "all_time").map((w) => ({ ...w, reached_at: reachedAt(w, now) }));
      return { token_id: t.id, label: labelOf.get(t.id)!, windows };
    }),
  );
  return {
    period,
    window_start: start,
    window_end: end,
    as_of: now.toISOString(),
    total: { amount_micros: sum(totals, "amount_micros"), fee_micros: sum(totals, "fee_micros"), payments: sum(totals, "n") },
    by_agent: linesBy(totals, (r) => r.token_id, (k) => (k === "" ? "No token recorded" : (labelOf.get(k) ?? k))),
    by_counterparty: linesBy(totals, (r) => `${r.rail} ${r.counterparty}`, (k) => counterpartyLabel(k.slice(k.indexOf(" ") + 1))).map((l) => ({ ...l, rail: l.key.slice(0, l.key.indexOf(" ")) as Rail })),
    by_rail: linesBy(totals, (r) => r.rail, (k) => RAIL_LABEL[k as Rail] ?? k),
    by_day: everyDay(start, end, days),
    burn: burn.filter((b) => b.windows.length > 0),
  };
}

/** "Ada Payee ****6789" (as the counters key a bank account) → "Ada Payee (account ending 6789)", as a transaction shows it. */
function counterpartyLabel(c: string): string {
  const m = /^(.*) \*\*\*\*(\w{0,4})$/.exec(c);
  return m ? `${m[1]} (account ending ${m[2]})` : c;
}

const sum = (rows: SpendDayTotal[], f: "amount_micros" | "fee_micros" | "n") => rows.reduce((a, r) => a + r[f], 0);

/** The counters grouped under one key each, the largest spend (amount plus fee) first. */
function linesBy(rows: SpendDayTotal[], keyOf: (r: SpendDayTotal) => string, labelOf: (key: string) => string): SpendLine[] {
  const by = new Map<string, SpendLine>();
  for (const r of rows) {
    const key = keyOf(r);
    const line = by.get(key) ?? { key, label: labelOf(key), amount_micros: 0, fee_micros: 0, payments: 0 };
    line.amount_micros += r.amount_micros;
    line.fee_micros += r.fee_micros;
    line.payments += r.n;
    by.set(key, line);
  }
  return [...by.values()].filter((l) => l.payments !== 0 || l.amount_micros !== 0).sort((a, b) => b.amount_micros + b.fee_micros - (a.amount_micros + a.fee_micros) || a.key.localeCompare(b.key));
}

/** Every UTC day of [start, end), with the counters' spend or none. */
function everyDay(start: string, end: string, rows: { day: string; amount_micros: number; fee_micros: number }[]) {
  const of = new Map(rows.map((r) => [r.day, r]));
  const out: SpendReport["by_day"] = [];
  for (let t = Date.parse(start); t < Date.parse(end); t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    out.push({ day, amount_micros: of.get(day)?.amount_micros ?? 0, fee_micros: of.get(day)?.fee_micros ?? 0 });
  }
  return out;
}

/**
 * When the window reaches its limit if spending goes on at its average rate since the window started: the
 * window's start if it is reached already, null if the rate does not reach it before the window ends.
 */
export function reachedAt(w: Pick<BurnWindow, "window_start" | "window_end" | "limit_usd" | "spent_usd">, now: Date): string | null {
  if (!w.window_start || !w.window_end) return null;
  if (w.spent_usd >= w.limit_usd) return w.window_start;
  const elapsed = now.getTime() - Date.parse(w.window_start);
  if (w.spent_usd <= 0 || elapsed <= 0) return null;
  const at = now.getTime() + ((w.limit_usd - w.spent_usd) * elapsed) / w.spent_usd;
  return at < Date.parse(w.window_end) ? new Date(at).toISOString() : null;
}
