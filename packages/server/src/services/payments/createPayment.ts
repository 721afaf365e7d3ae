/**
 * The payment core shared by every rail and endpoint: idempotency, the hold (amount + fee debited
 * atomically), then the rail's first step outside any database transaction. The creating request
 * owns the payment (a lease) until it answers; a repeat of its idempotency key meanwhile gets 409,
 * and afterwards the original payment. If the process dies, the lease expires and a worker resumes.
 */
import { refuseOwnAddress } from "../../rails/ownAddresses.ts";
import type { AppContext } from "../../context.ts";
import { type Principal, requireActive } from "../../domain/principal.ts";
import { ApiError, badRequest, conflict } from "../../domain/errors.ts";
import type { NewPayment, PaymentRow } from "../../ledger/store.ts";
import { formatUsdc } from "../../money.ts";
import { type RecipientOf, refusalError } from "../../domain/spending.ts";
import { holdControls } from "../spendingControls.ts";

export type PaymentIntent = Omit<NewPayment, "projectId" | "inFlightUntil" | "leaseOwner" | "railState"> & { railState?: unknown };

export type CreatedPayment = { payment: PaymentRow; replayed: boolean };

/** A repeat of an idempotency key: the original payment, or 409 while its request still runs. */
export async function findReplay(ctx: AppContext, projectId: string, key: string | null): Promise<PaymentRow | undefined> {
  if (key === null) return undefined;
  const existing = await ctx.ledger.findPaymentByKey(projectId, key);
  if (!existing) return undefined;
  if (existing.in_flight_until && existing.in_flight_until > ctx.clock().toISOString()) {
    throw conflict("idempotency_in_flight", `A request with idempotency_key "${key}" is still being processed. Retry in a few seconds to get its result.`);
  }
  return existing;
}

export function insufficient(availableMicros: number, amountMicros: number, feeMicros: number): ApiError {
  return badRequest(
    "insufficient_balance",
    `Insufficient balance: available ${formatUsdc(availableMicros)} USDC, required ${formatUsdc(amountMicros + feeMicros)} USDC (amount ${formatUsdc(amountMicros)} + fee ${formatUsdc(feeMicros)}). Fund the wallet by sending USDC on Base to GET /v1/stablecoin/address.`,
  );
}

/**
 * Accepts a USDC or bank payment: the hold is the whole of the request's work, so accepting is as
 * fast as the debit itself. The answer is `pending` (recorded, not yet submitted); the dispatcher
 * signs and submits it right after, under the lease the hold took. A replay is answered whatever the
 * project's state (it creates nothing, so a paused project can still read back its earlier result);
 * a new payment of a paused project is refused (403).
 */
export async function createPayment(ctx: AppContext, principal: Principal, intent: PaymentIntent): Promise<CreatedPayment> {
  const replay = await findReplay(ctx, principal.projectId, intent.idempotencyKey);
  if (replay) return { payment: replay, replayed: true };
  requireActive(principal);
  const rails = ctx.rails;
  const rail = rails?.byName[intent.rail];
  if (!rails || !rail || !ctx.dispatch) throw new ApiError(503, "rail_unavailable", `The ${intent.rail} rail is not configured on this deployment.`);
  if (intent.rail === "usdc_transfer") refuseOwnAddress(rails, principal.balance.walletAddress, intent.recipient);

  const now = ctx.clock();
  const leaseUntil = new Date(now.getTime() + ctx.config.workers.paymentRequestLeaseMs).toISOString();
  const estimatedArrival = intent.rail === "fiat" ? (rails.fiatProvider?.estimatedArrival ?? null) : null;
  const held = await ctx.ledger.hold({
    ...intent,
    estimatedArrival,
    railState: intent.railState ?? null,
    projectId: principal.projectId,
    // Nothing of the request remains once the hold committed: a repeat gets the payment at once.
    inFlightUntil: now.toISOString(),
    leaseOwner: ctx.instanceId,
    leaseUntil,
    controls: holdControls(ctx, principal, recipientOf(intent)),
  });
  if (held.kind === "insufficient") throw insufficient(held.availableMicros, intent.amountMicros, intent.feeMicros);
  if (held.kind === "refused") throw refusalError(held.refusal);
  if (held.kind === "duplicate") {
    const again = await findReplay(ctx, principal.projectId, intent.idempotencyKey);
    return { payment: again ?? held.payment, replayed: true };
  }
  // A payment awaiting approval waits for a person (approvals.ts); the worker takes it from there.
  if (held.payment.approval !== "awaiting") ctx.dispatch(held.payment);
  return { payment: held.payment, replayed: false };
}

function recipientOf(intent: PaymentIntent): RecipientOf {
  if (intent.rail === "fiat") {
    const bank = JSON.parse(intent.recipientJson ?? "{}") as { routing_number: string; account_number: string };
    return { rail: "fiat", routingNumber: bank.routing_number, accountNumber: bank.account_number };
  }
  return { rail: "usdc_transfer", address: intent.recipient };
}
