/**
 * The one hold of every rail (createPayment.ts and payByRequest.ts both hold through it): amount + fee
 * debited in one write, with the spending controls of the token and its project judged in that same
 * write (payments.hold, domain/spending.ts). A refusal, a short balance or a key another request used
 * first come back as what the caller sees.
 */
import type { PayResponse } from "@agentwallet/api";
import { sealBankRecipient } from "../../domain/bankAccount.ts";
import { type DomainError, badRequest, unavailable } from "../../domain/errors.ts";
import type { Principal } from "../../domain/principal.ts";
import { type RecipientOf, refusalError } from "../../domain/spending.ts";
import type { NewPayment } from "../../ledger/payments.ts";
import type { Payment } from "../../domain/payment.ts";
import { formatUsdc } from "../../money.ts";
import { holdControls } from "../spendingControls.ts";
import { findReplay } from "./idempotency.ts";
import type { PaymentContext } from "./paymentContext.ts";

export type CreatedPayment = { payment: Payment; replayed: boolean };

/** The core's answer: a payment (new or replayed), or the free reply of a target that asked for nothing. */
export type Created = ({ kind: "payment" } & CreatedPayment) | { kind: "reply"; body: PayResponse; replayed: boolean };

function insufficient(availableMicros: number, amountMicros: number, feeMicros: number): DomainError {
  return badRequest(
    "insufficient_balance",
    `Insufficient balance: available ${formatUsdc(availableMicros)} USDC, required ${formatUsdc(amountMicros + feeMicros)} USDC (amount ${formatUsdc(amountMicros)} + fee ${formatUsdc(feeMicros)}). Fund the wallet by sending USDC on Base to GET /v1/stablecoin/address.`,
  );
}

export function railUnavailable(name: string): DomainError {
  return unavailable("rail_unavailable", `The ${name} rail is not configured on this deployment.`);
}

export async function holdPayment(ctx: PaymentContext, principal: Principal, p: Omit<NewPayment, "projectId" | "leaseOwner" | "controls" | "tokenId" | "ancestorTokenIds">): Promise<CreatedPayment> {
  const held = await ctx.ledger.payments.hold({
    ...p,
    // The controls judge the whole number (its keyed hash); only its last four digits are kept in the clear.
    recipientJson: p.rail === "fiat" && p.recipientJson ? sealBankRecipient(ctx.bankAccountKey, principal.projectId, p.recipientJson) : p.recipientJson,
    projectId: principal.projectId,
    leaseOwner: ctx.instanceId,
    controls: holdControls(ctx, principal, recipientOf(p)),
    tokenId: principal.tokenId,
    ancestorTokenIds: principal.controls?.ancestors?.map((a) => a.tokenId),
  });
  if (held.kind === "insufficient") throw insufficient(held.availableMicros, p.amountMicros, p.feeMicros);
  if (held.kind === "refused") throw refusalError(held.refusal);
  if (held.kind === "duplicate") return { payment: (await findReplay(ctx, principal.projectId, p.idempotencyKey)) ?? held.payment, replayed: true };
  return { payment: held.payment, replayed: false };
}

function recipientOf(p: Pick<NewPayment, "rail" | "recipient" | "recipientJson">): RecipientOf {
  if (p.rail === "fiat") {
    const bank = JSON.parse(p.recipientJson ?? "{}") as { routing_number: string; account_number: string };
    return { rail: "fiat", routingNumber: bank.routing_number, accountNumber: bank.account_number };
  }
  if (p.rail === "x402") return { rail: "x402", url: p.recipient };
  return { rail: "usdc_transfer", address: p.recipient };
}
