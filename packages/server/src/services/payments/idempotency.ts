/**
 * Idempotency of every payment endpoint and rail, in one place. A key belongs to its project and is
 * held by one of:
 * - a payment row (`payments.idempotency_key`, unique per project): a repeat gets that payment, or 409
 *   `idempotency_in_flight` while the request that created it still runs;
 * - a claim, taken before the hold by a rail whose price is known only after a request to the recipient
 *   (x402): repeats get 409 while it runs; it goes when the hold writes the payment row or when the
 *   request is refused (nothing was recorded: a repeat is a new attempt);
 * - a kept reply: the recipient asked for nothing, and its free reply answers repeats for 24 hours
 *   without requesting it again.
 * Claims and kept replies are rows of `idempotency_keys` (ledger/idempotencyKeys.ts).
 */
import { randomBytes } from "node:crypto";
import type { PayResponse } from "@agentwallet/api";
import type { PaymentContext } from "./paymentContext.ts";
import { conflict } from "../../domain/errors.ts";
import type { Payment } from "../../domain/payment.ts";

/** How long a kept reply answers repeats of its key (the usual life of an idempotency key). */
export const KEPT_REPLY_MS = 24 * 3_600_000;

function inFlight(key: string) {
  return conflict("idempotency_in_flight", `A request with idempotency_key "${key}" is still being processed. Retry in a few seconds to get its result.`);
}

/**
 * A repeat of an idempotency key: the original payment, or 409 while its request still runs. A request that
 * answered before its record (payByRequest.ts) has ended for its caller: a repeat in the same process waits
 * for that record, a few milliseconds, and gets the payment; elsewhere it is told to retry.
 */
export async function findReplay(ctx: PaymentContext, projectId: string, key: string | null): Promise<Payment | undefined> {
  if (key === null) return undefined;
  let existing = await ctx.ledger.payments.findPaymentByKey(projectId, key);
  if (!existing) return undefined;
  const running = (p: Payment) => p.inFlightUntil !== null && p.inFlightUntil > ctx.clock().toISOString();
  const recording = running(existing) ? ctx.afterAnswer?.pending(existing.id) : undefined;
  if (recording) {
    await recording;
    existing = (await ctx.ledger.payments.getPayment(existing.id)) ?? existing;
  }
  if (running(existing)) throw inFlight(key);
  return existing;
}

/** The free reply kept under the key, if one is (read only: nothing is claimed). */
export async function keptReply(ctx: PaymentContext, projectId: string, key: string): Promise<PayResponse | undefined> {
  const json = await ctx.ledger.idempotencyKeys.keptReply(projectId, key, ctx.clock().toISOString());
  return json === undefined ? undefined : (JSON.parse(json) as PayResponse);
}

export type KeyClaim = {
  /** Gives the key up: nothing was recorded under it, or the payment row owns it now. */
  release(): Promise<void>;
  /** Keeps the free reply under the key: repeats return it without requesting again. */
  keepReply(body: PayResponse): Promise<void>;
};

/** Claims the key for this request: a claim, the reply kept under it, or 409 while another request holds it. */
export async function claimKey(ctx: PaymentContext, projectId: string, key: string): Promise<{ kind: "claimed"; claim: KeyClaim } | { kind: "reply"; body: PayResponse }> {
  const keys = ctx.ledger.idempotencyKeys;
  const token = randomBytes(12).toString("hex");
  const now = ctx.clock();
  const until = new Date(now.getTime() + ctx.config.workers.paymentRequestLeaseMs).toISOString();
  const claimed = await keys.claim(projectId, key, token, until, now.toISOString());
  if (claimed.kind === "reply") return { kind: "reply", body: JSON.parse(claimed.replyJson) as PayResponse };
  if (claimed.kind === "running") throw inFlight(key);
  return {
    kind: "claimed",
    claim: {
      release: () => keys.release(projectId, key, token),
      keepReply: (body) => keys.keepReply(projectId, key, token, JSON.stringify(body), new Date(ctx.clock().getTime() + KEPT_REPLY_MS).toISOString()),
    },
  };
}
