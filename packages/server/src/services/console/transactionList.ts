/**
 * The console's list of a project's transactions (ledger/consoleTransactions.ts): filters as a person types
 * them, checked here (400 `invalid_query`, as the API's list), pages with their place in the list, and the
 * whole list page by page for the CSV export. `GET /v1/transactions` is not this: it keeps its own rows
 * (a payment's fee a row of its own) and its own reads.
 */
import type { AgentName, Counterparty, ListFilters, ListPage, ListedTransaction } from "@agentwallet/console";
import { badRequest } from "../../domain/errors.ts";
import { type ConsoleFilter, type ConsoleRow, LISTED_STATUSES, LISTED_TYPES } from "../../ledger/consoleTransactions.ts";
import { failureFields } from "../payments/render.ts";
import type { ConsoleDeps } from "./viewers.ts";

const RAIL_TYPE = { x402: "x402_payment", usdc_transfer: "usdc_transfer", fiat: "payment" } as const;
const TYPE_RAIL: Record<string, ListedTransaction["rail"]> = { x402_payment: "x402", usdc_transfer: "usdc_transfer", payment: "fiat" };
/** The most tokens an agent filter reads with its sub-agents (one index range each). */
export const AGENT_TOKENS_MAX = 200;
/** Rows per read of the export: enough for few round trips, few enough to keep the process's memory flat. */
export const EXPORT_PAGE_ROWS = 1_000;
const COUNTERPARTY_MAX_CHARS = 200;
const MICROS_PER_CENT = 10_000;

type Deps = Pick<ConsoleDeps, "ledger">;

/** The filters in the ledger's terms; a token that is not the project's, or a bad bound, is a 400. */
export async function filterOf(deps: Deps, projectId: string, f: ListFilters): Promise<ConsoleFilter> {
  const listed = LISTED_TYPES as readonly string[];
  const bad = (detail: string) => badRequest("invalid_query", detail);
  for (const t of f.type ?? []) if (!listed.includes(t)) throw bad(`Type must be one of ${listed.join(", ")} (got "${t.slice(0, 40)}").`);
  for (const s of f.status ?? []) if (!LISTED_STATUSES.includes(s)) throw bad(`Status must be one of ${LISTED_STATUSES.join(", ")} (got "${s.slice(0, 40)}").`);
  for (const r of f.rail ?? []) if (!(r in RAIL_TYPE)) throw bad(`Rail must be one of x402, usdc_transfer, fiat (got "${String(r).slice(0, 40)}").`);
  let types = f.type?.length ? f.type : [...listed];
  if (f.rail?.length) types = types.filter((t) => f.rail!.some((r) => RAIL_TYPE[r] === t));
  const out: ConsoleFilter = { types: types.length ? types : ["none"] };
  if (f.status?.length) out.statuses = f.status;
  if (f.created_after) out.createdAfter = isoOf(f.created_after, "created_after");
  if (f.created_before) out.createdBefore = isoOf(f.created_before, "created_before");
  if (f.min_usd) out.minMicros = microsOf(f.min_usd, "minimum amount");
  if (f.max_usd) out.maxMicros = microsOf(f.max_usd, "maximum amount");
  const text = f.counterparty?.trim();
  if (text) {
    if (text.length > COUNTERPARTY_MAX_CHARS) throw bad(`The counterparty to look for is at most ${COUNTERPARTY_MAX_CHARS} characters (got ${text.length}).`);
    out.counterparty = text.toLowerCase();
  }
  if (f.agent) {
    const token = await deps.ledger.tokens.get(f.agent);
    if (!token || token.project_id !== projectId) throw bad("That agent is not a token of this project.");
    out.tokenIds = f.sub_agents ? await deps.ledger.consoleTransactions.withDescendants(projectId, f.agent, AGENT_TOKENS_MAX - 1) : [f.agent];
  }
  return out;
}

/**
 * A page of the list after (or before) a listed row, with its place: "101–150 of 4,001", or, where rows are
 * counted by reading them, "101–150 of 10,000+" past `countedMax` (ledger/consoleTransactions.ts).
 */
export async function listPage(deps: Deps, projectId: string, filters: ListFilters, page: { limit: number; starting_after?: string; ending_before?: string }, opts: { countedMax?: number } = {}): Promise<ListPage> {
  const f = await filterOf(deps, projectId, filters);
  const reads = deps.ledger.consoleTransactions;
  const keyOf = async (id: string) => {
    const key = await reads.keyOf(projectId, id);
    if (!key) throw badRequest("invalid_query", "That page's starting transaction is not in this project's list.");
    return key;
  };
  const after = page.starting_after ? await keyOf(page.starting_after) : undefined;
  const before = !after && page.ending_before ? await keyOf(page.ending_before) : undefined;
  const { rows, more } = await reads.page(projectId, f, { limit: page.limit, after, before });
  const first = rows[0];
  // The first page's place needs no count of the rows before it.
  const { total, newer, totalCapped, newerCapped } = await reads.count(projectId, f, first && (after || before) ? { createdAt: first.created_at, pos: first.pos } : undefined, opts.countedMax);
  return {
    rows: rows.map(listed),
    total,
    total_capped: totalCapped,
    position: first ? newer + 1 : 0,
    position_capped: newerCapped,
    has_newer: before ? more : newer > 0,
    // Going back from a page: a capped total has more rows than were counted, the older ones among them.
    has_older: before ? totalCapped || newer + rows.length < total : more,
  };
}

/** The whole filtered list, `EXPORT_PAGE_ROWS` at a time, each read after the last row of the one before. */
export async function* exportPages(deps: Deps, projectId: string, filters: ListFilters): AsyncGenerator<ListedTransaction[]> {
  const f = await filterOf(deps, projectId, filters);
  let after: { createdAt: string; pos: number } | undefined;
  for (;;) {
    const { rows, more } = await deps.ledger.consoleTransactions.page(projectId, f, { limit: EXPORT_PAGE_ROWS, after });
    if (rows.length) yield rows.map(listed);
    const last = rows[rows.length - 1];
    if (!more || !last) return;
    after = { createdAt: last.created_at, pos: last.pos };
  }
}

/** One row as the list shows it (a fee's id: null, its payment's row has it), for the transaction's page. */
export async function listedTransaction(deps: Deps, projectId: string, id: string): Promise<ListedTransaction | null> {
  const row = await deps.ledger.consoleTransactions.one(projectId, id);
  return row ? listed(row) : null;
}

export async function agentNames(deps: Deps, projectId: string): Promise<AgentName[]> {
  const tokens = await deps.ledger.tokens.list(projectId);
  return tokens.map((t) => ({ id: t.id, name: t.name, prefix: t.display_prefix, parent_id: t.parent_id, revoked: t.revoked_at !== null }));
}

function listed(r: ConsoleRow): ListedTransaction {
  const toMicros = (amount: number, currency: string | null) => (currency === "usd" ? amount * MICROS_PER_CENT : amount);
  const failure = failureFields({ status: r.status, failureCode: r.failure_code, failureReason: r.failure_reason });
  return {
    id: r.id,
    type: r.type,
    status: r.status,
    rail: TYPE_RAIL[r.type] ?? null,
    amount_micros: toMicros(r.amount, r.currency),
    fee_micros: r.fee_amount === null ? null : toMicros(r.fee_amount, r.fee_currency),
    description: r.description,
    counterparty: counterpartyOf(r),
    agent: r.token_id && r.token_prefix ? { id: r.token_id, name: r.token_name, prefix: r.token_prefix } : null,
    created_at: r.created_at,
    completed_at: r.completed_at,
    failure_code: failure.failure_code ?? null,
    failure_message: failure.failure_message ?? null,
    tx_hash: r.tx_hash,
  };
}

/** Who the row was with, from what its payment recorded (or, for rows without one, its merchant name). */
export function counterpartyOf(r: Pick<ConsoleRow, "type" | "recipient" | "recipient_json" | "merchant_name" | "from_address">): Counterparty | null {
  if (r.type === "usdc_fund") return r.from_address ? { kind: "sender", address: r.from_address } : null;
  if (r.type === "payment") {
    const bank = parseBank(r.recipient_json);
    const holder = bank?.name ?? r.recipient ?? r.merchant_name;
    return holder ? { kind: "bank", holder, account: bank?.account_number ? `••••${bank.account_number.slice(-4)}` : null } : null;
  }
  if (r.type === "usdc_transfer") return r.recipient ? { kind: "address", address: r.recipient } : null;
  if (r.type === "x402_payment") {
    if (r.recipient) {
      try {
        const u = new URL(r.recipient);
        return { kind: "x402", host: u.host, path: u.pathname };
      } catch {
        return { kind: "x402", host: r.recipient.slice(0, 200), path: "" };
      }
    }
    return r.merchant_name ? { kind: "x402", host: r.merchant_name, path: "" } : null;
  }
  return null;
}

function parseBank(json: string | null): { name?: string; account_number?: string } | null {
  if (!json) return null;
  try {
    return JSON.parse(json) as { name?: string; account_number?: string };
  } catch {
    return null;
  }
}

function isoOf(text: string, name: string): string {
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}/.test(text) || !Number.isFinite(ms)) throw badRequest("invalid_query", `${name} must be an ISO 8601 time with a time zone, e.g. 2026-01-31T00:00:00Z or 2026-01-31 (got "${text.slice(0, 40)}").`);
  return new Date(ms).toISOString();
}

/** "12.5" → 12,500,000 micro-USD, integers only (no float arithmetic on money). */
function microsOf(text: string, name: string): number {
  const m = /^\s*\$?(\d{1,9})(?:\.(\d{1,6}))?\s*$/.exec(text);
  if (!m) throw badRequest("invalid_query", `The ${name} must be dollars with at most six decimals, e.g. 12.50 (got "${text.slice(0, 40)}").`);
  return Number(m[1]) * 1_000_000 + Number((m[2] ?? "").padEnd(6, "0"));
}
