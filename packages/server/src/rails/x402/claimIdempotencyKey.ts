/**
 * The idempotency key of an x402 request is claimed before the target is requested, because the
 * price is known only after a request: without the claim, repeats of one key would each request the
 * target (and a free POST would run twice). The claim is a row of the `kv` table, taken with an
 * insert that only one request can win:
 * - while its request runs, a repeat gets 409 (as for every rail);
 * - when the request holds a payment, the payment row owns the key (findReplay) and the claim goes;
 * - when the target answered without 402, the free reply is kept under the key and repeats get it back
 *   without a second request;
 * - when the request is refused (nothing signed, held or charged), the key is given up, so a repeat is
 *   a new attempt.
 * A claim whose request died is taken over once its lease has passed. A kept reply lives 24 hours (the
 * usual life of an idempotency key): after that the key is free again, and `pruneExpiredPassThrough`
 * removes such rows in bounded batches, so replies (up to the fetcher's 1 MiB each) cannot pile up.
 */
import { randomBytes } from "node:crypto";
import type { PayResponse } from "@agentwallet/api";
import type { AppContext } from "../../context.ts";
import { conflict } from "../../domain/errors.ts";

export type KeyClaim = {
  /** Gives the key up: nothing was recorded under it. */
  release(): Promise<void>;
  /** Keeps a free pass-through reply under the key: repeats return it without requesting again. */
  rememberPassThrough(body: PayResponse): Promise<void>;
};

export type ClaimResult = { kind: "claimed"; claim: KeyClaim } | { kind: "passthrough"; body: PayResponse };

type Stored = { state: "running"; until: string; token: string } | { state: "passthrough"; body: PayResponse; expires?: string };

/** How long a kept pass-through reply answers repeats of its key. */
export const PASS_THROUGH_KEEP_MS = 24 * 3_600_000;
const KEY_PREFIX = "x402_idempotency:";

/** Two racing takeovers of a dead claim: one wins, the other sees a running claim on its next look. */
const CLAIM_ATTEMPTS_MAX = 3;

export async function claimIdempotencyKey(ctx: AppContext, projectId: string, key: string): Promise<ClaimResult> {
  const db = ctx.ledger.db;
  const kvKey = `${KEY_PREFIX}${projectId}:${key}`;
  const until = new Date(ctx.clock().getTime() + ctx.config.workers.paymentRequestLeaseMs).toISOString();
  const mine = JSON.stringify({ state: "running", until, token: randomBytes(12).toString("hex") } satisfies Stored);
  const claim: KeyClaim = {
    async release() {
      await db.deleteFrom("kv").where("key", "=", kvKey).where("value", "=", mine).execute();
    },
    async rememberPassThrough(body) {
      const expires = new Date(ctx.clock().getTime() + PASS_THROUGH_KEEP_MS).toISOString();
      await db.updateTable("kv").set({ value: JSON.stringify({ state: "passthrough", body, expires } satisfies Stored) }).where("key", "=", kvKey).where("value", "=", mine).execute();
    },
  };
  for (let attempt = 0; attempt < CLAIM_ATTEMPTS_MAX; attempt++) {
    const inserted = await db.insertInto("kv").values({ key: kvKey, value: mine }).onConflict((oc) => oc.column("key").doNothing()).returning("key").executeTakeFirst();
    if (inserted) return { kind: "claimed", claim };
    const row = await db.selectFrom("kv").select("value").where("key", "=", kvKey).executeTakeFirst();
    if (!row) continue;
    const stored = JSON.parse(row.value) as Stored;
    const now = ctx.clock().toISOString();
    if (stored.state === "passthrough" && (stored.expires === undefined || stored.expires > now)) return { kind: "passthrough", body: stored.body };
    if (stored.state === "running" && stored.until > now) break;
    // A dead claim or an expired reply: take the key over, if no one else did meanwhile.
    const taken = await db.updateTable("kv").set({ value: mine }).where("key", "=", kvKey).where("value", "=", row.value).returning("key").executeTakeFirst();
    if (taken) return { kind: "claimed", claim };
  }
  throw conflict("idempotency_in_flight", `A request with idempotency_key "${key}" is still being processed. Retry in a few seconds to get its result.`);
}

/** The free reply kept under the key, if one is (read only: nothing is claimed). */
export async function keptPassThrough(ctx: AppContext, projectId: string, key: string): Promise<PayResponse | undefined> {
  const row = await ctx.ledger.db.selectFrom("kv").select("value").where("key", "=", `${KEY_PREFIX}${projectId}:${key}`).executeTakeFirst();
  if (!row) return undefined;
  const stored = JSON.parse(row.value) as Stored;
  return stored.state === "passthrough" && (stored.expires === undefined || stored.expires > ctx.clock().toISOString()) ? stored.body : undefined;
}

/**
 * Removes expired pass-through replies, walking the keys in order from `after` (at most `max` rows a
 * call). Returns where to continue, or undefined once the end was reached (start again from the top).
 */
export async function pruneExpiredPassThrough(ctx: AppContext, after: string | undefined, max = 500): Promise<string | undefined> {
  const rows = await ctx.ledger.db
    .selectFrom("kv")
    .select(["key", "value"])
    .where("key", "like", `${KEY_PREFIX}%`)
    .where("key", ">", after ?? "")
    .orderBy("key")
    .limit(max)
    .execute();
  const now = ctx.clock().toISOString();
  for (const row of rows) {
    const stored = JSON.parse(row.value) as Stored;
    if (stored.state === "passthrough" && stored.expires !== undefined && stored.expires <= now) {
      await ctx.ledger.db.deleteFrom("kv").where("key", "=", row.key).where("value", "=", row.value).execute();
    }
  }
  return rows.length === max ? rows.at(-1)!.key : undefined;
}
