/**
 * FiatProvider port: an off-ramp that receives USDC on-chain and pays USD out by ACH. Adapters for
 * real providers implement this; the sandbox provider ships built in.
 */
import type { BankRecipient } from "@agentwallet/api";
import type { Address } from "viem";

export type PayoutStatus = "processing" | "completed" | "failed" | "returned";
export type Payout = { payoutId: string; reference: string; status: PayoutStatus; reason: string | null };

export interface FiatProvider {
  readonly name: string;
  /** Where the USDC for each payout is sent from the project wallet. */
  readonly depositAddress: Address;
  /** Delivery estimate shown to the caller. */
  readonly estimatedArrival: string;
  /** Idempotent by `reference` (our payment id): a repeat returns the same payout. */
  createPayout(req: { reference: string; amountCents: number; recipient: BankRecipient; refundAddress: Address }): Promise<Payout>;
  getPayout(payoutId: string): Promise<Payout | undefined>;
}
