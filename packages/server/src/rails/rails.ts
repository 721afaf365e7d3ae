/**
 * The payment rails of a running deployment. Each rail moves one payment forward by one step at a
 * time (`advance`), persisting before every external call, so the worker can resume any payment
 * after a crash by calling `advance` again.
 */
import type { Relayer } from "../chain/relayer.ts";
import type { ChainRuntime } from "../chain/runtime.ts";
import type { ProxiedResponse } from "@agentwallet/api";
import type { Payment } from "../domain/payment.ts";
import type { FiatProvider } from "./fiat/provider.ts";
import type { RailStateCodec } from "./railState.ts";
import type { X402HeldState, X402SettledState, X402SignedState } from "./x402/x402State.ts";
import type { OfferReport } from "./x402/readOffer.ts";

export type AdvanceResult = { done: boolean; retryInMs?: number };

export interface Rail {
  /**
   * Moves an open payment forward; idempotent; safe to call after any crash. Throws `CorruptRailState`
   * (railState.ts) when the payment's state does not parse, before anything is done.
   */
  advance(payment: Payment): Promise<AdvanceResult>;
}

/**
 * A rail's `advance` from its step function: the payment's state is read once, by the rail's codec,
 * and the step is given it parsed. The step writes the next stage through the same codec, in the same
 * write as what it did (the relayer stores a signed transaction and its stage by compare-and-set).
 */
export function advanceByStage<S extends { stage: string }>(states: RailStateCodec<S>, step: (payment: Payment, state: S) => Promise<AdvanceResult>): Rail["advance"] {
  return (payment) => step(payment, states.read(payment));
}

/** A request to pay an HTTP API by x402: what is sent to the target, and the caller's cap on the price. */
export type X402Call = {
  url: string;
  method: "GET" | "POST" | "PUT" | "DELETE";
  headers: Record<string, string> | undefined;
  body: string | undefined;
  maxAmountMicros: number;
};

/** The target's reply to the unpaid request. */
export type TargetReply = { paymentRequired: boolean; raw: unknown; proxied: () => ProxiedResponse };

/**
 * What the chosen requirement asks, as a quote shows it and a payment with a quote compares it: the
 * protocol and, for x402, its scheme (`evm/charge` for MPP), the network, asset, payee and price; and the
 * merchant's signed offer for it, read only when asked (POST /v1/quote).
 */
export type X402Terms = {
  protocol: "x402" | "mpp";
  scheme: string;
  network: string;
  asset: string;
  payTo: string;
  amountMicros: number;
  maxTimeoutSeconds: number | null;
  offer(): Promise<OfferReport | null>;
};

/** The requirement `judge` chose: its price and the rail state of a payment held for it (`held`). */
export type X402Quote = { amountMicros: number; state: X402HeldState; fromBlock: Promise<number>; terms: X402Terms };

/** A signed payment: the header to send, and the rail state that records it (`signed`). */
export type X402Signature = { header: { name: string; value: string }; state: X402SignedState };

/** A settlement the paid reply proves on-chain, or undefined (no reply, no receipt, or one that does not prove). */
export type ProvenSettlement = { txHash: `0x${string}`; state: X402SettledState } | undefined;

/**
 * The paid retry's outcome: never sent (nothing can pay), or sent, with the reply and the proof of the settlement it
 * reports (`prove`: a read of the chain, made when asked). The proof never rejects: one that cannot be read is
 * undefined, and the worker lets the chain decide.
 */
export type X402PaidOutcome =
  | { kind: "not_sent"; error: Error; reason: string }
  | { kind: "sent"; reply: ProxiedResponse | undefined; prove(): Promise<ProvenSettlement> };

/** A connection dialled for the paid retry, used once. */
export type PaidRetry = { close(): void };

/**
 * The x402 rail as the payment core drives it (services/payments/payByRequest.ts): the steps that
 * talk to the target and sign. It records nothing: the core persists every stage before the next call.
 */
export interface X402Rail extends Rail {
  /** Lease the request must have left to send a signature safely (two fetches and a margin). */
  leaseNeededMs: number;
  /** The unpaid request. Throws a fetch failure (nothing was charged). */
  request(call: X402Call): Promise<TargetReply>;
  /** Reads and judges the 402: the requirement to pay, or a refusal thrown (nothing signed). */
  judge(reply: TargetReply, walletIndex: number, maxAmountMicros: number): Promise<X402Quote>;
  /** Dials the paid retry's fresh connection now, while the payment is signed and held. */
  prepareRetry(url: string): PaidRetry;
  /**
   * Signs the quote from the project wallet. `identity` names the payment to a merchant that declared x402's
   * payment-identifier (derived from the project and the idempotency key).
   */
  sign(walletIndex: number, quote: X402Quote, identity: { projectId: string; idempotencyKey: string | null }): Promise<X402Signature>;
  /** Sends the paid retry over `retry`; the outcome proves, when asked, a settlement the target reports. */
  sendPaid(retry: PaidRetry, call: X402Call, signature: X402Signature, paymentId: string): Promise<X402PaidOutcome>;
}

export type Rails = {
  x402?: X402Rail;
  chain: ChainRuntime;
  relayer: Relayer;
  fiatProvider?: FiatProvider;
  byName: Partial<Record<Payment["rail"], Rail>>;
  /** One pass of the return watch over completed bank payments (fiat/returnWatch.ts), when there is an off-ramp. */
  watchReturns?: (wake: () => void) => Promise<unknown>;
  /** Told of every payment that reached a final state outside a rail (settlement/settlementRetry.ts): metrics. */
  onFinal?: (p: Payment, outcome: "failed") => void;
};

/** The rail that advances payments of `name` (the dispatcher, the worker and the core look it up here). */
export function railFor(rails: Rails | undefined, name: Payment["rail"]): Rail | undefined {
  return name === "x402" ? rails?.x402 : rails?.byName[name];
}
