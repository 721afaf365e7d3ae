/**
 * GET /v1/transactions/{id}/evidence: the evidence records of the transaction's payment (its own transaction
 * or its fee's), oldest first, with the project's chain head. Another project's id answers as an unknown one.
 */
import type { TransactionEvidence } from "@agentwallet/api";
import { notFound } from "../../domain/errors.ts";
import type { EvidenceReadStore, TransactionReadStore } from "../../ledger/ports.ts";

export async function getEvidence(ledger: { transactions: TransactionReadStore; evidence: EvidenceReadStore }, projectId: string, id: string): Promise<TransactionEvidence> {
  const row = await ledger.transactions.detail(projectId, id);
  if (!row) throw notFound("transaction_not_found", `No transaction ${id.slice(0, 80)} in this project. List them with GET /v1/transactions.`);
  const [records, head] = await Promise.all([row.payment_id ? ledger.evidence.ofPayment(projectId, row.payment_id) : [], ledger.evidence.head(projectId)]);
  return {
    transaction_id: row.id,
    payment_id: row.payment_id,
    project_id: projectId,
    records: records.map((r) => ({ seq: Number(r.seq), kind: r.kind, at: r.at, body: r.body, prev_hash: r.prev_hash, hash: r.hash })),
    chain_head: head,
  };
}
