/**
 * A forger's edit of evidence records: `edit` applied to each record's parsed body (undefined leaves it), and
 * every hash from the first edit on recomputed and chained again, so that only the content checks
 * (signatures, on-chain logs) can find it.
 */
import { evidenceHash } from "../../../src/ledger/evidenceHash.ts";
import type { EvidenceRecord } from "../../../src/services/evidence/verifyEvidence.ts";

export function rechained<B>(records: EvidenceRecord[], edit: (body: B) => B | undefined): EvidenceRecord[] {
  const out: EvidenceRecord[] = [];
  for (const r of records) {
    const edited = edit(JSON.parse(r.body) as B);
    const prev = out.at(-1);
    if (edited === undefined && (prev === undefined || prev.hash === r.prev_hash)) {
      out.push(r);
      continue;
    }
    const next = { ...r, body: edited === undefined ? r.body : JSON.stringify(edited), prev_hash: prev ? prev.hash : r.prev_hash };
    out.push({ ...next, hash: evidenceHash({ ...next, seq: Number(next.seq) }) });
  }
  return out;
}

export async function* iterate(records: EvidenceRecord[]): AsyncGenerator<EvidenceRecord> {
  yield* records;
}
