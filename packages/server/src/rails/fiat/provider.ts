/**
 * FiatProvider port: an off-ramp that receives USDC on-chain and pays USD out by ACH. Adapters for
 * real providers implement this; the sandbox provider ships built in.
 *
 * Two flows: `deposit_first` (the sandbox): the USDC goes to `depositAddress`, then `createPayout`.
 * `payout_first` (Bridge): `createPayout` first, and it names where, and exactly how much, USDC to send.
 */
import type { BankRecipient } from "@agentwallet/api";
import type { Address } from "viem";

/**
 * `refunded`: the payout failed and the provider sent the USDC back to the refund address.
 * `returned`: paid out, then returned (ACH return), and the USDC is back with us.
 */
export type PayoutStatus = "processing" | "completed" | "failed" | "returned" | "refunded";
/**
 * `reason`: the provider's or the bank's words for a failure or a return (e.g. an ACH return code), shown
 * to the client as `failure_message`. `refused`: the provider itself refused the payout (bank details it
 * does not accept) rather than the bank failing it; the payment's code is then `payout_refused`.
 */
export type Payout = {
  payoutId: string;
  reference: string;
  status: PayoutStatus;
  reason: string | null;
  refused?: boolean;
  /** `payout_first`: where the USDC for this payout goes, and how much. */
  deposit?: { address: Address; amountMicros: number };
  /** Where the USDC is when the status alone does not say (a refund under way), for the ledger. */
  note?: string | null;
  /** `refunded`/`returned`: the on-chain transaction that sent the USDC back, when the provider names it. */
  refundTxHash?: string;
  /** When the provider last changed it (ms of the provider's clock), from `changedSince`. */
  updatedAtMs?: number;
};

/**
 * A provider call that did not succeed, thrown by `payout_first` providers only while nothing was sent:
 * `refused` (the provider said no: the payment fails at once with its words, `payout_refused`) or
 * `unavailable` (the settlement retry rule tries again, bounded).
 */
export class FiatProviderError extends Error {
  override name = "FiatProviderError";
  constructor(
    readonly kind: "refused" | "unavailable",
    message: string,
    readonly httpStatus?: number,
    readonly providerCode?: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface FiatProvider {
  readonly name: string;
  /** `deposit_first` (default): where the USDC for each payout is sent from the project wallet. */
  readonly depositAddress?: Address;
  readonly flow?: "deposit_first" | "payout_first";
  /** How often an open payout is read when no webhook came (default 1 s). */
  readonly pollIntervalMs?: number;
  /** Delivery estimate shown to the caller. */
  readonly estimatedArrival: string;
  /**
   * Idempotent by `reference` (our payment id): a repeat returns the same payout. `deposit_first`: a
   * payout the provider will not make is answered as a `failed` payout (its USDC refunded to
   * `refundAddress`), never thrown: a throw is taken as an error a retry may cure
   * (settlement/settlementRetry.ts), and the USDC already reached the provider. `payout_first`: nothing was
   * sent yet, so a refusal is thrown as `FiatProviderError` ("refused") and fails the payment at once.
   */
  createPayout(req: { reference: string; amountCents: number; recipient: BankRecipient; refundAddress: Address }): Promise<Payout>;
  getPayout(payoutId: string): Promise<Payout | undefined>;
  /**
   * Payouts the provider changed strictly after `afterMs` (its clock), at most `limit` of them, each with its
   * `updatedAtMs` (Bridge: `GET /v0/transfers?updated_after_ms=`). A provider without such a list leaves it
   * out, and the return watch reads each watched payout instead (rails/fiat/returnWatch.ts).
   */
  changedSince?(afterMs: number, limit: number): Promise<Payout[]>;
}
