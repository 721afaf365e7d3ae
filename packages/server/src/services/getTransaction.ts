/**
 * GET /v1/transactions/{id}: one transaction of the caller's project, as the list shows it plus what its
 * payment or deposit adds. Another project's id is answered exactly as an unknown one.
 */
import type { TransactionDetail } from "@agentwallet/api";
import { relayerCondition } from "../chain/relayer.ts";
import { notFound } from "../domain/errors.ts";
import type { Payment } from "../domain/payment.ts";
import type { KvStore } from "../ledger/ports.ts";
import type { DetailRow, TransactionReads } from "../ledger/transactionReads.ts";
import { waitsOnRelayer } from "../rails/railStates.ts";
import { renderTransaction } from "./listTransactions.ts";
import { approvalField } from "./payments/render.ts";

export async function getTransaction(ledger: { transactions: TransactionReads; kv: KvStore }, projectId: string, id: string): Promise<TransactionDetail> {
  const row = await ledger.transactions.detail(projectId, id);
  if (!row) throw notFound("transaction_not_found", `No transaction ${id.slice(0, 80)} in this project. List them with GET /v1/transactions.`);
  const detail = renderDetail(row);
  const waiting = await waitingOf(ledger.kv, row);
  return waiting ? { ...detail, waiting } : detail;
}

/** Why an open payment is not moving, when the service knows: its relayer cannot pay gas (chain/relayer.ts). */
async function waitingOf(kv: KvStore, r: DetailRow): Promise<TransactionDetail["waiting"]> {
  if (r.rail === null || r.payment_id !== r.id) return undefined;
  if (!waitsOnRelayer({ id: r.id, rail: r.rail, status: r.status as Payment["status"], railState: r.rail_state })) return undefined;
  const c = await relayerCondition(kv);
  return c && { code: c.code, detail: c.detail, since: c.since };
}

export function renderDetail(r: DetailRow): TransactionDetail {
  const ofPayment = r.payment_id !== null && r.rail !== null;
  const isFee = ofPayment && r.type === "platform_fee";
  const isPayment = ofPayment && !isFee;
  return {
    ...renderTransaction(r),
    metadata: r.metadata ? (JSON.parse(r.metadata) as Record<string, string>) : null,
    rail: ofPayment ? r.rail : null,
    recipient: isPayment ? recipientOf(r) : null,
    tx_hash: isPayment ? (r.rail === "fiat" ? null : r.payment_tx_hash) : r.deposit_tx_hash,
    payment_id: isFee ? r.payment_id : isPayment ? r.fee_txn_id : null,
    ...(isPayment ? approvalField({ approval: r.approval, approvalUntil: r.approval_until, approvalDecidedAt: r.approval_decided_at, approvalDecidedBy: r.approval_decided_by, approvalDecidedByName: r.approval_decided_by_name, approvalReason: r.approval_reason }) : {}),
  };
}

/** The URL or address; for a bank account its holder's name and the last four digits of its number, never the whole number. */
function recipientOf(r: DetailRow): string | null {
  if (r.rail !== "fiat" || !r.recipient_json) return r.recipient;
  const bank = JSON.parse(r.recipient_json) as { name: string; account_number: string };
  return `${bank.name} (account ending ${bank.account_number.slice(-4)})`;
}
