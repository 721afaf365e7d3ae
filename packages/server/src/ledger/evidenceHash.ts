/**
 * The hash of an evidence record (evidence.ts), in one place for the triggers' SQLite function, the
 * verifier and anyone checking an exported file: sha256 of every field but the hash, joined by newlines.
 */
import { createHash } from "node:crypto";
import type { EvidenceTable } from "./schema.ts";

/** The previous hash of a project's first record. */
export const EVIDENCE_GENESIS = "0".repeat(64);

/** The fields a record's hash covers, in this order, joined by newlines: every column but the hash. */
export type HashedFields = Pick<EvidenceTable, "prev_hash" | "seq" | "project_id" | "payment_id" | "kind" | "at" | "body">;

/** The hash a record must carry (the triggers of evidence.ts compute the same in SQL). */
export function evidenceHash(r: HashedFields): string {
  const text = [r.prev_hash, String(r.seq), r.project_id, r.payment_id, r.kind, r.at, r.body].join("\n");
  return createHash("sha256").update(text, "utf8").digest("hex");
}

/** The SQLite function the triggers hash with (db.ts registers it on every connection it opens). */
export const SQLITE_SHA256_FUNCTION = "aw_sha256";
export const sqliteSha256 = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

