/**
 * The payment core shared by every rail and endpoint: idempotency (idempotency.ts), the hold (amount +
 * fee debited atomically, spending controls judged in the same write: payments.hold), then the rail's
 * next step. The creating request owns the payment (a lease) until it answers; a repeat of its
 * idempotency key meanwhile gets 409, and afterwards the original payment. If the process dies, the
 * lease expires and a worker resumes (the dispatcher and the worker advance every rail alike).
 *
 * USDC and bank payments know their price: the hold is the whole of the request's work. An x402
 * payment learns its price from the target: the same core claims its key, asks the target, and holds
 * what the target asks (payByRequest.ts).
 */
import { refuseOwnAddress } from "../../rails/ownAddresses.ts";
import type { PaymentContext } from "./paymentContext.ts";
import type { QuoteContext } from "./quotePrice.ts";
import { type Principal, requireActive } from "../../domain/principal.ts";
import type { NewPayment } from "../../ledger/payments.ts";
import { type Created, type CreatedPayment, holdPayment, railUnavailable } from "./hold.ts";
import { railFor } from "../../rails/rails.ts";
import { findReplay, keptReply } from "./idempotency.ts";
import { type X402Request, payByRequest } from "./payByRequest.ts";

export type { Created, CreatedPayment } from "./hold.ts";

/** A payment whose price the request states (USDC, bank). */
export type PaymentIntent = Omit<NewPayment, "projectId" | "inFlightUntil" | "leaseOwner" | "railState" | "rail"> & { rail: "usdc_transfer" | "fiat" };

/** What a payment request asks for: a priced intent (USDC, bank), or a URL to pay what it asks (x402). */
export type PaymentRequest = PaymentIntent | X402Request;

/**
 * Accepts a payment of any rail. A replay is answered whatever the project's state (it creates
 * nothing, so a paused project can still read back its earlier result); a new payment of a paused
 * project is refused (403).
 */
export async function createPayment(ctx: QuoteContext, principal: Principal, request: PaymentRequest): Promise<Created> {
  const key = request.idempotencyKey;
  const replay = await findReplay(ctx, principal.projectId, key);
  if (replay) return { kind: "payment", payment: replay, replayed: true };
  // A paused project still reads back what its key holds (a kept free reply); it claims nothing.
  if (principal.paused && key !== null) {
    const kept = await keptReply(ctx, principal.projectId, key);
    if (kept) return { kind: "reply", body: kept, replayed: true };
  }
  requireActive(principal);
  if (request.rail === "x402") return await payByRequest(ctx, principal, request);
  return { kind: "payment", ...(await acceptPriced(ctx, principal, request)) };
}

/**
 * A USDC or bank payment: the hold is the whole of the request's work, so accepting is as fast as the
 * debit itself. The answer is `pending` (recorded, not yet submitted); the dispatcher signs and
 * submits it right after, under the lease the hold took.
 */
async function acceptPriced(ctx: PaymentContext, principal: Principal, intent: PaymentIntent): Promise<CreatedPayment> {
  const rails = ctx.rails;
  if (!rails || !railFor(rails, intent.rail) || !ctx.dispatch) throw railUnavailable(intent.rail);
  if (intent.rail === "usdc_transfer") refuseOwnAddress(rails, principal.balance.walletAddress, intent.recipient);
  const now = ctx.clock();
  const held = await holdPayment(ctx, principal, {
    ...intent,
    estimatedArrival: intent.rail === "fiat" ? (rails.fiatProvider?.estimatedArrival ?? null) : null,
    // Held with no state: the rail's `held` stage (usdc/usdcState.ts, fiat/fiatState.ts).
    railState: null,
    // Nothing of the request remains once the hold committed: a repeat gets the payment at once.
    inFlightUntil: now.toISOString(),
    leaseUntil: new Date(now.getTime() + ctx.config.workers.paymentRequestLeaseMs).toISOString(),
  });
  // A payment awaiting approval waits for a person (approvals.ts); the worker takes it from there.
  if (!held.replayed && held.payment.approval !== "awaiting") ctx.dispatch(held.payment);
  return held;
}
