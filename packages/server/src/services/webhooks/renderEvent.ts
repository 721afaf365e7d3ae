/**
 * The body of a webhook event: `{ type, timestamp, data }` (Standard Webhooks' shape), `data` being the
 * transaction as GET /v1/transactions/{id} shows it. Rendered when the event is first sent, with the
 * status the event reports (a payment.completed sent after a return still says `completed`); the rest
 * of the object is as of that first attempt, and every later attempt sends the same bytes
 * (decisions.md, "Webhook payloads").
 */
import type { TransactionDetail } from "@agentwallet/api";
import type { TransactionReads } from "../../ledger/transactionReads.ts";
import type { WebhookEventRow } from "../../ledger/webhookOutbox.ts";
import { renderDetail } from "../getTransaction.ts";

export async function renderWebhookEvent(transactions: TransactionReads, e: Pick<WebhookEventRow, "type" | "project_id" | "object_id" | "status" | "occurred_at">): Promise<string> {
  const data = await transactionOf(transactions, e);
  return JSON.stringify({ type: e.type, timestamp: e.occurred_at, data: { ...data, status: e.status === "seen" ? "pending" : e.status === "credited" ? "completed" : e.status } });
}

async function transactionOf(transactions: TransactionReads, e: Pick<WebhookEventRow, "type" | "project_id" | "object_id">): Promise<TransactionDetail> {
  const row = await transactions.detail(e.project_id, e.object_id);
  if (row) return renderDetail(row);
  // A deposit seen but not yet credited: the transaction it becomes, as it will be listed.
  const d = await transactions.depositOf(e.project_id, e.object_id);
  // Impossible: every event names a row that is never deleted.
  if (!d) throw new Error(`webhook event ${e.type} names ${e.object_id}, which does not exist`);
  return renderDetail({
    id: e.object_id,
    type: "usdc_fund",
    status: "pending",
    amount: Number(d.amount_micros),
    currency: "usdc",
    description: `USDC deposit from ${d.from_address}`,
    merchant_name: null,
    created_at: d.seen_at,
    completed_at: null,
    payment_id: null,
    metadata: null,
    failure_code: null,
    failure_reason: null,
    rail: null,
    recipient: null,
    recipient_json: null,
    payment_tx_hash: null,
    fee_txn_id: null,
    deposit_tx_hash: d.tx_hash,
    rail_state: null,
    approval: null,
    approval_until: null,
    approval_decided_at: null,
    approval_decided_by: null,
    approval_decided_by_name: null,
    approval_reason: null,
  });
}
