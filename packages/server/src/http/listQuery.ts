/**
 * The query of GET /v1/transactions: `limit` and `offset` as the contract has them, and the filters and
 * cursor added beside them. Each refusal is a 400 `invalid_query` naming the parameter and what it takes.
 *
 * Combining them: filters narrow the list and total_count counts what matches; `offset` skips rows of
 * the filtered list, at most `limits.filteredOffsetMax` of them (deeper pages go by cursor);
 * `starting_after` starts the page after that transaction and cannot be combined with an offset.
 */
import { TransactionStatus, TransactionType, limits } from "@agentwallet/api";
import { badRequest } from "../domain/errors.ts";
import type { TransactionFilter } from "../ledger/transactionReads.ts";

export type ParsedListQuery = {
  limit: number;
  offset: number;
  filter?: TransactionFilter;
  /** The id given as `starting_after`, still to be found in the project. */
  startingAfter?: string;
};

const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?))?$/i;
const ID_MAX_CHARS = 200;

export function parseListQuery(query: unknown): ParsedListQuery {
  const q = (query ?? {}) as Record<string, unknown>;
  const limit = integer(q, "limit", limits.pageLimitMin, limits.pageLimitMax, limits.pageLimitDefault);
  const offset = integer(q, "offset", 0, limits.pageOffsetMax, 0);
  const types = values(q, "type", TransactionType.options);
  const statuses = values(q, "status", TransactionStatus.options);
  const createdAfter = time(q, "created_after", "after");
  const createdBefore = time(q, "created_before", "before");
  const startingAfter = single(q, "starting_after");
  if (startingAfter !== undefined && (startingAfter.length === 0 || startingAfter.length > ID_MAX_CHARS)) {
    throw badRequest("invalid_query", `Query parameter 'starting_after' must be the id of a transaction (1 to ${ID_MAX_CHARS} characters).`);
  }
  const filtered = types !== undefined || statuses !== undefined || createdAfter !== undefined || createdBefore !== undefined;
  if (startingAfter !== undefined && offset > 0) {
    throw badRequest("invalid_query", "Query parameters 'starting_after' and 'offset' cannot be combined: page with starting_after=<id of the last transaction you received> alone.");
  }
  if (filtered && offset > limits.filteredOffsetMax) {
    throw badRequest("invalid_query", `Query parameter 'offset' must be at most ${limits.filteredOffsetMax} with filters (got ${offset}); page deeper with starting_after=<id of the last transaction you received>.`);
  }
  const filter: TransactionFilter | undefined = filtered
    ? {
        types: types ?? TransactionType.options,
        statuses: statuses ?? TransactionStatus.options,
        ...(createdAfter !== undefined ? { createdAfter } : {}),
        ...(createdBefore !== undefined ? { createdBefore } : {}),
      }
    : undefined;
  return { limit, offset, ...(filter ? { filter } : {}), ...(startingAfter !== undefined ? { startingAfter } : {}) };
}

function single(q: Record<string, unknown>, name: string): string | undefined {
  const raw = q[name];
  if (raw === undefined) return undefined;
  if (Array.isArray(raw)) {
    if (raw.length !== 1) throw badRequest("invalid_query", `Query parameter '${name}' may be given once.`);
    return String(raw[0]);
  }
  return String(raw);
}

function integer(q: Record<string, unknown>, name: string, min: number, max: number, def: number): number {
  const raw = q[name];
  if (raw === undefined) return def;
  // As before the filters existed: a repeated limit or offset takes its first value.
  const text = Array.isArray(raw) ? String(raw[0]) : String(raw);
  if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
    throw badRequest("invalid_query", `Query parameter '${name}' must be an integer from ${min} to ${max} (got "${text.slice(0, 40)}").`);
  }
  const n = Number(text);
  if (n < min || n > max) throw badRequest("invalid_query", `Query parameter '${name}' must be from ${min} to ${max} (got ${n}).`);
  return n;
}

/** `type=a,b` and `type=a&type=b` alike; each value one of `allowed`, duplicates ignored. */
function values<T extends string>(q: Record<string, unknown>, name: string, allowed: readonly T[]): T[] | undefined {
  const raw = q[name];
  if (raw === undefined) return undefined;
  const given = (Array.isArray(raw) ? raw : [raw]).flatMap((v) => String(v).split(",")).map((v) => v.trim());
  const unknown = given.filter((v) => !(allowed as readonly string[]).includes(v));
  if (given.length === 0 || unknown.length > 0) {
    const bad = unknown.length ? `"${unknown[0]!.slice(0, 40)}"` : "nothing";
    throw badRequest("invalid_query", `Query parameter '${name}' must be one or more of ${allowed.join(", ")} (comma-separated or repeated); got ${bad}.`);
  }
  if (given.length > limits.filterValuesMax) throw badRequest("invalid_query", `Query parameter '${name}' takes at most ${limits.filterValuesMax} values (got ${given.length}).`);
  return [...new Set(given)] as T[];
}

/**
 * An ISO 8601 date (midnight UTC) or date and time with `Z` or an offset, normalised to the stored
 * form (`Date#toISOString`, milliseconds). Finer precision is rounded outward, so an exclusive bound
 * keeps its meaning: down for `after`, up for `before`.
 */
function time(q: Record<string, unknown>, name: string, side: "after" | "before"): string | undefined {
  const text = single(q, name);
  if (text === undefined) return undefined;
  const m = ISO_8601.exec(text);
  const fix = `Query parameter '${name}' must be an ISO 8601 time with a time zone, e.g. 2026-01-31T00:00:00Z or 2026-01-31 (got "${text.slice(0, 40)}").`;
  if (!m || (m[4] !== undefined && m[8] === undefined)) throw badRequest("invalid_query", fix);
  const [, y, mo, d, h, mi, sec, fraction = "", zone] = m;
  const offset = !zone || /^z$/i.test(zone) ? "Z" : `${zone.slice(0, 3)}:${zone.slice(3).replace(":", "") || "00"}`;
  const canonical = h === undefined ? `${y}-${mo}-${d}T00:00:00.000Z` : `${y}-${mo}-${d}T${h}:${mi}:${sec ?? "00"}.${fraction.slice(0, 3).padEnd(3, "0")}${offset}`;
  const ms = Date.parse(canonical);
  // Date.parse rolls an impossible day over (Feb 30 → Mar 2): refuse it instead.
  if (Number.isFinite(ms) && new Date(Date.parse(`${y}-${mo}-${d}T12:00:00Z`)).getUTCDate() !== Number(d)) throw badRequest("invalid_query", fix);
  if (!Number.isFinite(ms)) throw badRequest("invalid_query", fix);
  const finer = /[1-9]/.test(fraction.slice(3));
  const rounded = finer && side === "before" ? ms + 1 : ms;
  const at = new Date(rounded);
  if (at.getUTCFullYear() < 1 || at.getUTCFullYear() > 9999) throw badRequest("invalid_query", fix);
  return at.toISOString();
}
