/**
 * The payment rails of a running deployment. Each rail moves one payment forward by one step at a
 * time (`advance`), persisting before every external call, so the worker can resume any payment
 * after a crash by calling `advance` again.
 */
import type { Relayer } from "../chain/relayer.ts";
import type { ChainRuntime } from "../chain/runtime.ts";
import type { PayRequest, PayResponse, X402PayRequest, X402PayResponse } from "@agentwallet/api";
import type { Principal } from "../domain/principal.ts";
import type { PaymentRow } from "../ledger/store.ts";
import type { FiatProvider } from "./fiat/provider.ts";

export type AdvanceResult = { done: boolean; retryInMs?: number };

export interface Rail {
  /** Moves an open payment forward; idempotent; safe to call after any crash. */
  advance(payment: PaymentRow): Promise<AdvanceResult>;
}

/** The x402 rail: pays a URL that answers 402 (its own flow: the price is known only after a request). */
export interface X402Rail extends Rail {
  /** `POST /v1/pay` with a URL recipient; permissions already checked. */
  pay(principal: Principal, body: PayRequest & { recipient: string }): Promise<{ httpStatus: number; body: PayResponse; replayed: boolean }>;
  /** Deprecated `POST /v1/x402/pay`; permissions already checked. */
  /** `idempotencyKey`: from the `Idempotency-Key` header (the deprecated body has no such field). */
  payLegacy(principal: Principal, body: X402PayRequest, idempotencyKey?: string | null): Promise<{ httpStatus: number; body: X402PayResponse; replayed: boolean }>;
}

export type Rails = {
  x402?: X402Rail;
  chain: ChainRuntime;
  relayer: Relayer;
  fiatProvider?: FiatProvider;
  byName: Partial<Record<PaymentRow["rail"], Rail>>;
  /** Told of every payment that reached a final state outside a rail (settlementRetry.ts): metrics. */
  onFinal?: (p: PaymentRow, outcome: "failed") => void;
};
