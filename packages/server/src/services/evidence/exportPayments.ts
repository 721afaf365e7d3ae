/**
 * `agentwallet export`: a project's payments for accounting, streamed a page at a time (bounded memory).
 * - `jsonl`: first the project's evidence records in chain order (`{"record": …}`, what `verify-evidence
 *   --file` checks with no database), then one line per payment (`{"payment": …}`) with its fee, rail,
 *   counterparty, status history and the hash of its last record;
 * - `csv`: the payment lines alone, one row each (the status history as `status@time` joined by `;`).
 */
import type { EvidenceReadStore } from "../../ledger/ports.ts";
import type { ExportedPayment } from "../../ledger/evidence.ts";
import { EVIDENCE_PAGE_SIZE, recordsOf } from "./verifyEvidence.ts";

export type ExportFormat = "jsonl" | "csv";

/** Payments read at once. */
const PAYMENTS_PAGE_SIZE = 200;

const CSV_COLUMNS = ["payment_id", "created_at", "rail", "status", "amount", "fee", "currency", "amount_micros", "fee_micros", "counterparty", "tx_hash", "provider_ref", "failure_code", "status_history", "evidence_hash"] as const;

/** Writes the export through `write` (awaited, so a slow sink holds the reads back); returns the payments written. */
export async function exportPayments(evidence: Pick<EvidenceReadStore, "page" | "paymentsPage" | "head">, projectId: string, format: ExportFormat, write: (chunk: string) => Promise<void>): Promise<{ payments: number; records: number }> {
  let records = 0;
  if (format === "jsonl") {
    await write(`${JSON.stringify({ export: { project_id: projectId, chain_head: await evidence.head(projectId) } })}\n`);
    let lines: string[] = [];
    for await (const r of recordsOf(evidence, projectId)) {
      records += 1;
      lines.push(JSON.stringify({ record: { ...r, seq: Number(r.seq) } }));
      if (lines.length >= EVIDENCE_PAGE_SIZE) (await write(`${lines.join("\n")}\n`), (lines = []));
    }
    if (lines.length) await write(`${lines.join("\n")}\n`);
  } else {
    await write(`${CSV_COLUMNS.join(",")}\n`);
  }
  let payments = 0;
  let after: { createdAt: string; id: string } | null = null;
  for (;;) {
    const page: ExportedPayment[] = await evidence.paymentsPage(projectId, after, PAYMENTS_PAGE_SIZE);
    if (page.length === 0) break;
    payments += page.length;
    await write(page.map((p) => (format === "jsonl" ? JSON.stringify({ payment: row(p) }) : csvLine(p))).join("\n") + "\n");
    const last = page[page.length - 1]!;
    after = { createdAt: last.created_at, id: last.id };
    if (page.length < PAYMENTS_PAGE_SIZE) break;
  }
  return { payments, records };
}

function row(p: ExportedPayment) {
  return {
    payment_id: p.id,
    created_at: p.created_at,
    rail: p.rail,
    status: p.status,
    amount: p.amount_units,
    fee: p.fee_units,
    currency: p.currency,
    amount_micros: p.amount_micros,
    fee_micros: p.fee_micros,
    counterparty: p.recipient,
    tx_hash: p.tx_hash,
    provider_ref: p.provider_ref,
    failure_code: p.failure_code,
    status_history: p.status_history,
    evidence_hash: p.evidence_hash,
  };
}

function csvLine(p: ExportedPayment): string {
  const r = row(p);
  const cell = (v: unknown) => {
    const text = v === null || v === undefined ? "" : Array.isArray(v) ? v.map((h: { status: string; at: string }) => `${h.status}@${h.at}`).join(";") : String(v);
    // RFC 4180 quoting; a leading formula character is neutralised for spreadsheets.
    const safe = /^[=+\-@]/.test(text) ? `'${text}` : text;
    return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
  };
  return CSV_COLUMNS.map((c) => cell(c === "status_history" ? r.status_history : r[c as keyof typeof r])).join(",");
}

/** The evidence records of an exported JSONL file's lines, in the file's order (other lines skipped). */
export async function* recordsOfExport(lines: AsyncIterable<string>): AsyncGenerator<import("./verifyEvidence.ts").EvidenceRecord> {
  for await (const line of lines) {
    if (!line.trim()) continue;
    const parsed = JSON.parse(line) as { record?: import("./verifyEvidence.ts").EvidenceRecord };
    if (parsed.record) yield parsed.record;
  }
}
