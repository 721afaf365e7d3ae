/**
 * The payment's row as stored, and its one mapping to the domain's `Payment` (domain/payment.ts). Inside
 * `ledger/` only: an import rule (.dependency-cruiser.cjs, "payment-rows-stay-in-the-ledger") keeps this
 * module and schema.ts from every other layer, so above the ledger a payment is always a `Payment`.
 */
import type { Approval, Micros, Payment, PaymentPatch, RailUnits } from "../domain/payment.ts";
import type { PaymentsTable } from "./schema.ts";

export type PaymentRow = PaymentsTable;

/** The row as the domain sees it: the same values under camelCase names. */
export function toPayment(r: PaymentRow): Payment {
  return {
    id: r.id,
    projectId: r.project_id,
    rail: r.rail,
    status: r.status,
    amountUnits: r.amount_units as RailUnits,
    feeUnits: r.fee_units as RailUnits,
    amountMicros: r.amount_micros as Micros,
    feeMicros: r.fee_micros as Micros,
    currency: r.currency,
    recipient: r.recipient,
    recipientJson: r.recipient_json,
    description: r.description,
    idempotencyKey: r.idempotency_key,
    feeTxnId: r.fee_txn_id,
    txHash: r.tx_hash,
    providerRef: r.provider_ref,
    estimatedArrival: r.estimated_arrival,
    responseJson: r.response_json,
    railState: r.rail_state,
    failureReason: r.failure_reason,
    failureCode: r.failure_code,
    stepErrors: r.step_errors,
    inFlightUntil: r.in_flight_until,
    leaseOwner: r.lease_owner,
    leaseUntil: r.lease_until,
    nextAttemptAt: r.next_attempt_at,
    attempts: r.attempts,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    completedAt: r.completed_at,
    metadata: r.metadata,
    tokenId: r.token_id,
    spendWindows: r.spend_windows,
    approval: r.approval as Approval | null,
    approvalUntil: r.approval_until,
    approvalDecidedBy: r.approval_decided_by,
    approvalDecidedAt: r.approval_decided_at,
    approvalDecidedByName: r.approval_decided_by_name ?? null,
    approvalReason: r.approval_reason ?? null,
    returnCheckedAt: r.return_checked_at,
    refundTxHash: r.refund_tx_hash,
  };
}

const PATCH_COLUMNS: { [K in keyof Required<PaymentPatch>]: keyof PaymentRow } = {
  status: "status",
  txHash: "tx_hash",
  providerRef: "provider_ref",
  estimatedArrival: "estimated_arrival",
  responseJson: "response_json",
  railState: "rail_state",
  nextAttemptAt: "next_attempt_at",
  inFlightUntil: "in_flight_until",
  leaseOwner: "lease_owner",
  leaseUntil: "lease_until",
  attempts: "attempts",
  failureReason: "failure_reason",
  failureCode: "failure_code",
  stepErrors: "step_errors",
  recipientJson: "recipient_json",
};

/** The patch under its columns' names, with the same keys and values; throws on a key no patch may carry. */
export function toRowPatch(patch: PaymentPatch): Partial<PaymentRow> {
  const row: Record<string, unknown> = {};
  for (const k of Object.keys(patch) as (keyof PaymentPatch)[]) {
    const column = PATCH_COLUMNS[k];
    if (column === undefined) throw new Error(`a payment patch may not set ${k}`);
    row[column] = patch[k];
  }
  return row as Partial<PaymentRow>;
}
