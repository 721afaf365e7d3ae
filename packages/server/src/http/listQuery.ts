/**
 * The query of GET /v1/transactions, parsed by the contract's own schema (`ListTransactionsQuery` in
 * packages/api: the parameters, their bounds and defaults) with the stricter reading of query text
 * added around each field. Each refusal is a 400 `invalid_query` naming the parameter and what it takes.
 *
 * Combining them: filters narrow the list and total_count counts what matches; `offset` skips rows of
 * the filtered list, at most `limits.filteredOffsetMax` of them (deeper pages go by cursor);
 * `starting_after` starts the page after that transaction and cannot be combined with an offset.
 */
import { ListTransactionsQuery, TransactionStatus, TransactionType, limits } from "@agentwallet/api";
import { z } from "zod";
import { badRequest } from "../domain/errors.ts";
import type { TransactionFilter } from "../ledger/transactionReads.ts";

export type ParsedListQuery = {
  limit: number;
  offset: number;
  filter?: TransactionFilter;
  /** The id given as `starting_after`, still to be found in the project. */
  startingAfter?: string;
};

const fields = ListTransactionsQuery.shape;
const ISO_8601 = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(Z|[+-]\d{2}(?::?\d{2})?))?$/i;
const ID_MAX_CHARS = 200;

/** Refuses the value with this detail; the parse stops at the first refusal (fields in the contract's order). */
function refuse(ctx: z.RefinementCtx, detail: string): never {
  ctx.addIssue({ code: "custom", message: detail });
  return z.NEVER;
}

/** The bounds of `limit` or `offset`, as the contract's schema has them. */
function bounds(name: "limit" | "offset"): { min: number; max: number } {
  const n = fields[name].unwrap();
  return { min: n.minValue ?? 0, max: n.maxValue ?? Number.MAX_SAFE_INTEGER };
}

/** Digits only (the contract's coercion would take " 5", "1e2" or ""); as before the filters existed, a repeated one takes its first value. */
function integer(name: "limit" | "offset") {
  const { min, max } = bounds(name);
  return z.preprocess((raw, ctx) => {
    if (raw === undefined) return undefined;
    const text = Array.isArray(raw) ? String(raw[0]) : String(raw);
    if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
      return refuse(ctx, `Query parameter '${name}' must be an integer from ${min} to ${max} (got "${text.slice(0, 40)}").`);
    }
    return Number(text);
  }, fields[name]);
}

/** A parameter that may be given once. */
function single(name: string, raw: unknown, ctx: z.RefinementCtx): string | undefined {
  if (raw === undefined || !Array.isArray(raw)) return raw === undefined ? undefined : String(raw);
  if (raw.length !== 1) return refuse(ctx, `Query parameter '${name}' may be given once.`);
  return String(raw[0]);
}

/** `type=a,b` and `type=a&type=b` alike; each value one of `allowed`, duplicates ignored. */
function values<T extends string>(name: "type" | "status", allowed: readonly T[]) {
  const fix = (bad: string) => `Query parameter '${name}' must be one or more of ${allowed.join(", ")} (comma-separated or repeated); got ${bad}.`;
  return z
    .preprocess((raw, ctx) => {
      if (raw === undefined) return undefined;
      const list = Array.isArray(raw) ? raw : [raw];
      return list.length === 0 ? refuse(ctx, fix("nothing")) : list.map(String).join(",");
    }, fields[name])
    .transform((text, ctx): T[] | undefined => {
      if (text === undefined) return undefined;
      const given = text.split(",").map((v) => v.trim());
      const unknown = given.find((v) => !(allowed as readonly string[]).includes(v));
      if (unknown !== undefined) return refuse(ctx, fix(`"${unknown.slice(0, 40)}"`));
      if (given.length > limits.filterValuesMax) return refuse(ctx, `Query parameter '${name}' takes at most ${limits.filterValuesMax} values (got ${given.length}).`);
      return [...new Set(given)] as T[];
    });
}

/**
 * An ISO 8601 date (midnight UTC) or date and time with `Z` or an offset, normalised to the stored
 * form (`Date#toISOString`, milliseconds). Finer precision is rounded outward, so an exclusive bound
 * keeps its meaning: down for `after`, up for `before`.
 */
function time(name: "created_after" | "created_before", side: "after" | "before") {
  return z.preprocess((raw, ctx) => single(name, raw, ctx), fields[name]).transform((text, ctx) => {
    if (text === undefined) return undefined;
    const m = ISO_8601.exec(text);
    const fix = `Query parameter '${name}' must be an ISO 8601 time with a time zone, e.g. 2026-01-31T00:00:00Z or 2026-01-31 (got "${text.slice(0, 40)}").`;
    if (!m || (m[4] !== undefined && m[8] === undefined)) return refuse(ctx, fix);
    const [, y, mo, d, h, mi, sec, fraction = "", zone] = m;
    const offset = !zone || /^z$/i.test(zone) ? "Z" : `${zone.slice(0, 3)}:${zone.slice(3).replace(":", "") || "00"}`;
    const canonical = h === undefined ? `${y}-${mo}-${d}T00:00:00.000Z` : `${y}-${mo}-${d}T${h}:${mi}:${sec ?? "00"}.${fraction.slice(0, 3).padEnd(3, "0")}${offset}`;
    const ms = Date.parse(canonical);
    // Date.parse rolls an impossible day over (Feb 30 → Mar 2): refuse it instead.
    if (!Number.isFinite(ms) || new Date(Date.parse(`${y}-${mo}-${d}T12:00:00Z`)).getUTCDate() !== Number(d)) return refuse(ctx, fix);
    const finer = /[1-9]/.test(fraction.slice(3));
    const at = new Date(finer && side === "before" ? ms + 1 : ms);
    if (at.getUTCFullYear() < 1 || at.getUTCFullYear() > 9999) return refuse(ctx, fix);
    return at.toISOString();
  });
}

const startingAfter = z.preprocess((raw, ctx) => single("starting_after", raw, ctx), fields.starting_after).refine(
  (id) => id === undefined || (id.length > 0 && id.length <= ID_MAX_CHARS),
  `Query parameter 'starting_after' must be the id of a transaction (1 to ${ID_MAX_CHARS} characters).`,
);

const ListQuery = z
  .object({
    limit: integer("limit"),
    offset: integer("offset"),
    type: values("type", TransactionType.options),
    status: values("status", TransactionStatus.options),
    created_after: time("created_after", "after"),
    created_before: time("created_before", "before"),
    starting_after: startingAfter,
  } satisfies Record<keyof typeof fields, z.ZodType>)
  .transform((q, ctx): ParsedListQuery => {
    const filtered = q.type !== undefined || q.status !== undefined || q.created_after !== undefined || q.created_before !== undefined;
    if (q.starting_after !== undefined && q.offset > 0) {
      return refuse(ctx, "Query parameters 'starting_after' and 'offset' cannot be combined: page with starting_after=<id of the last transaction you received> alone.");
    }
    if (filtered && q.offset > limits.filteredOffsetMax) {
      return refuse(ctx, `Query parameter 'offset' must be at most ${limits.filteredOffsetMax} with filters (got ${q.offset}); page deeper with starting_after=<id of the last transaction you received>.`);
    }
    const filter: TransactionFilter | undefined = filtered
      ? {
          types: q.type ?? TransactionType.options,
          statuses: q.status ?? TransactionStatus.options,
          ...(q.created_after !== undefined ? { createdAfter: q.created_after } : {}),
          ...(q.created_before !== undefined ? { createdBefore: q.created_before } : {}),
          ...(q.type === undefined && q.status === undefined ? { timeRangeOnly: true } : {}),
        }
      : undefined;
    return { limit: q.limit, offset: q.offset, ...(filter ? { filter } : {}), ...(q.starting_after !== undefined ? { startingAfter: q.starting_after } : {}) };
  });

export function parseListQuery(query: unknown): ParsedListQuery {
  const r = ListQuery.safeParse(query ?? {}, { reportInput: true });
  if (r.success) return r.data;
  throw badRequest("invalid_query", detailOf(r.error.issues[0]!));
}

/** The contract's own checks (the bounds of limit and offset) in the words of the refusals above. */
function detailOf(issue: z.core.$ZodIssue): string {
  const name = issue.path[0];
  if ((issue.code === "too_small" || issue.code === "too_big") && (name === "limit" || name === "offset")) {
    const { min, max } = bounds(name);
    return `Query parameter '${name}' must be from ${min} to ${max} (got ${String(issue.input)}).`;
  }
  return issue.message;
}
