/** Wire shapes of a payment, one per endpoint that can return it. */
import { paidByMpp } from "../../rails/x402/x402State.ts";
import type { ApprovalState, LegacyPaymentResponse, PayResponse, PaymentStatus, ProxiedResponse, UsdcTransferResponse, X402PayResponse } from "@agentwallet/api";
import type { Payment } from "../../domain/payment.ts";
import { microsToUsdcNumber } from "../../money.ts";

/** The payment's metadata as given, or null. */
function metadataOf(p: Payment): Record<string, string> | null {
  return p.metadata ? (JSON.parse(p.metadata) as Record<string, string>) : null;
}

/**
 * The deprecated endpoints' answers keep their shape unless the payment was given metadata: a client
 * of theirs that sends none sees nothing new.
 */
function legacyMetadataOf(p: Payment): { metadata?: Record<string, string> } {
  const m = metadataOf(p);
  return m ? { metadata: m } : {};
}

/** The payment as it is now, `reversed` included (decisions.md, "A replay shows the payment as it is now"). */
function wireStatus(p: Payment): PaymentStatus {
  return p.status;
}

/**
 * `failure_code` and `failure_message` of a failed or reversed payment (or transaction), each only when
 * known: absent on every other status, so the spec's shapes are unchanged for them.
 */
export function failureFields(r: Pick<Payment, "failureCode" | "failureReason"> & { status: string }): { failure_code?: string; failure_message?: string } {
  if (r.status !== "failed" && r.status !== "reversed") return {};
  return { ...(r.failureCode ? { failure_code: r.failureCode } : {}), ...(r.failureReason ? { failure_message: r.failureReason } : {}) };
}

/**
 * `approval` of a payment that needed a person's approval, and only of such a payment (absent otherwise,
 * so the spec's shapes are unchanged): `awaiting` is shown as `required`, the word an agent acts on.
 */
export function approvalField(r: {
  approval: string | null;
  approvalUntil: string | null;
  approvalDecidedAt: string | null;
  approvalDecidedBy?: string | null;
  approvalDecidedByName?: string | null;
  approvalReason?: string | null;
}): { approval?: ApprovalState } {
  if (r.approval === null || r.approvalUntil === null) return {};
  const status = r.approval === "awaiting" ? "required" : (r.approval as ApprovalState["status"]);
  const decided = status === "approved" || status === "denied";
  return {
    approval: {
      status,
      expires_at: r.approvalUntil,
      decided_at: decided ? r.approvalDecidedAt : null,
      // The decision's reason, when one was given, and the deciding credential's name when an operator (not a token) decided.
      ...(decided && r.approvalReason ? { reason: r.approvalReason } : {}),
      ...(decided && r.approvalDecidedByName && byOperator(r.approvalDecidedBy ?? null) ? { decided_by_name: r.approvalDecidedByName } : {}),
    },
  };
}

/** Whether a decision's `approval_decided_by` names an operator (an admin credential's id, the CLI's "cli:<user>"), not a token ("tok_…", formerly "token tok_…"). */
const byOperator = (decidedBy: string | null) => decidedBy !== null && !/^(tok_|token )/.test(decidedBy);

export function renderPay(p: Payment): PayResponse {
  return {
    id: p.id,
    status: wireStatus(p),
    rail: p.rail,
    amount_charged: p.amountUnits,
    fee: p.feeUnits,
    currency: p.currency,
    recipient: p.recipient,
    tx_hash: p.rail === "fiat" ? null : p.txHash,
    created_at: p.createdAt,
    estimated_arrival: p.rail === "fiat" ? p.estimatedArrival : null,
    response: p.rail === "x402" && p.responseJson ? JSON.parse(p.responseJson) : null,
    ...(paidByMpp(p) ? { protocol: "mpp" as const } : {}),
    ...failureFields(p),
    metadata: metadataOf(p),
    ...approvalField(p),
  };
}

export function renderLegacyPayment(p: Payment): LegacyPaymentResponse {
  return { id: p.id, status: wireStatus(p), amount: p.amountUnits, recipient_name: p.recipient, created_at: p.createdAt, estimated_arrival: p.estimatedArrival, ...failureFields(p), ...legacyMetadataOf(p) };
}

export function renderUsdcTransfer(p: Payment): UsdcTransferResponse {
  return {
    id: p.id,
    status: wireStatus(p),
    amount_usdc: microsToUsdcNumber(p.amountMicros),
    fee_usdc: microsToUsdcNumber(p.feeMicros),
    to_address: p.recipient,
    chain: "base",
    tx_hash: p.txHash,
    created_at: p.createdAt,
    ...failureFields(p),
    ...legacyMetadataOf(p),
  };
}

export function renderX402(p: Payment): X402PayResponse {
  const r = p.responseJson ? (JSON.parse(p.responseJson) as { status_code: number; headers: Record<string, string>; body: string }) : { status_code: 0, headers: {}, body: "" };
  // `settled` is the merchant's settlement, proven on-chain (x402 sets tx_hash only then); the
  // payment itself completes a little later, once the fee reached the treasury.
  return { ...r, payment_amount: p.amountUnits, fee_amount: p.feeUnits, tx_hash: p.txHash, settled: p.txHash !== null && p.status !== "failed", ...legacyMetadataOf(p) };
}

/**
 * A target that did not answer 402 was not paid: its reply comes back completed, for 0, under an id of
 * its own (`req_…`, not a transaction id: nothing is recorded in the ledger).
 */
export function renderFreeReply(r: { id: string; createdAt: string; recipient: string; response: ProxiedResponse }): PayResponse {
  return {
    id: r.id,
    status: "completed",
    rail: "x402",
    amount_charged: 0,
    fee: 0,
    currency: "usdc",
    recipient: r.recipient,
    tx_hash: null,
    created_at: r.createdAt,
    estimated_arrival: null,
    response: r.response,
  };
}

/** The free reply as the deprecated `POST /v1/x402/pay` answers it. */
export function renderX402FreeReply(body: PayResponse): X402PayResponse {
  return { ...body.response!, payment_amount: 0, fee_amount: 0, tx_hash: null, settled: false };
}
