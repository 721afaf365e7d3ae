/**
 * What the payment core uses of the application's context (declared here, by its consumer; deps.ts
 * builds the whole of it).
 */
import type { Logger } from "pino";
import type { IdGenerator } from "../../ids.ts";
import type { Payment } from "../../domain/payment.ts";
import type { IdempotencyKeyStore } from "../../ledger/ports.ts";
import type { Rails } from "../../rails/rails.ts";
import type { SpendingContext } from "../spendingControls.ts";

/**
 * Runs the work that follows a payment's answer (the record of an x402 payment's paid reply), tracked so that
 * a graceful stop waits for it, and so that a repeat of the payment's key in this process waits for the record
 * instead of being told to retry.
 */
export type AfterAnswer = {
  /** `key`: the payment's id, whose repeats may wait for the work (`pending`); other work takes a key of its own. */
  run(key: string, work: () => Promise<unknown>): void;
  /** Settles once the payment's work is done (never rejects); undefined when none runs here. */
  pending(paymentId: string): Promise<void> | undefined;
};

export type PaymentContext = SpendingContext & {
  ledger: { idempotencyKeys: IdempotencyKeyStore };
  config: { workers: { paymentRequestLeaseMs: number } };
  newId: IdGenerator;
  logger: Logger;
  /** The rails of the deployment; absent until the chain is configured. */
  rails: Rails | undefined;
  /** Hands a just-accepted payment (leased to this process) to the dispatcher. */
  dispatch?: (payment: Payment) => void;
  /** Work that follows an answer already on its way; absent, the work is done before answering. */
  afterAnswer?: AfterAnswer;
  /** Identifies this process in payment leases. */
  instanceId: string;
  /** Seals a bank payment's account number until its payout is created (domain/bankAccount.ts). */
  bankAccountKey: Uint8Array;
};
