/** Wire shapes of a payment, one per endpoint that can return it. */
import type { LegacyPaymentResponse, PayResponse, PaymentStatus, UsdcTransferResponse, X402PayResponse } from "@agentwallet/api";
import type { PaymentRow } from "../../ledger/store.ts";
import { microsToUsdcNumber } from "../../money.ts";

/** `reversed` is not a status of the payment responses: a reversed payment had completed. */
function wireStatus(p: PaymentRow): PaymentStatus {
  return p.status === "reversed" ? "completed" : p.status;
}

export function renderPay(p: PaymentRow): PayResponse {
  return {
    id: p.id,
    status: wireStatus(p),
    rail: p.rail,
    amount_charged: p.amount_units,
    fee: p.fee_units,
    currency: p.currency,
    recipient: p.recipient,
    tx_hash: p.rail === "fiat" ? null : p.tx_hash,
    created_at: p.created_at,
    estimated_arrival: p.rail === "fiat" ? p.estimated_arrival : null,
    response: p.rail === "x402" && p.response_json ? JSON.parse(p.response_json) : null,
  };
}

export function renderLegacyPayment(p: PaymentRow): LegacyPaymentResponse {
  return { id: p.id, status: wireStatus(p), amount: p.amount_units, recipient_name: p.recipient, created_at: p.created_at, estimated_arrival: p.estimated_arrival };
}

export function renderUsdcTransfer(p: PaymentRow): UsdcTransferResponse {
  return {
    id: p.id,
    status: wireStatus(p),
    amount_usdc: microsToUsdcNumber(p.amount_micros),
    fee_usdc: microsToUsdcNumber(p.fee_micros),
    to_address: p.recipient,
    chain: "base",
    tx_hash: p.tx_hash,
    created_at: p.created_at,
  };
}

export function renderX402(p: PaymentRow): X402PayResponse {
  const r = p.response_json ? (JSON.parse(p.response_json) as { status_code: number; headers: Record<string, string>; body: string }) : { status_code: 0, headers: {}, body: "" };
  // `settled` is the merchant's settlement, proven on-chain (x402 sets tx_hash only then); the
  // payment itself completes a little later, once the fee reached the treasury.
  return { ...r, payment_amount: p.amount_units, fee_amount: p.fee_units, tx_hash: p.tx_hash, settled: p.tx_hash !== null && p.status !== "failed" };
}
