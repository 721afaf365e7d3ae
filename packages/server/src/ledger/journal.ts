/**
 * The journal's movements: each a set of entries on accounts (accounts.ts) that sums to zero, written in
 * the same write as the balance rows they explain (verify.ts proves it).
 */
import type { CompiledQuery, Insertable, Kysely } from "kysely";
import type { IdGenerator } from "../ids.ts";
import type { Database } from "./schema.ts";

export type Entry = { account: string; projectId: string | null; amountMicros: number };
type JournalRow = Insertable<Database["journal_entries"]>;

/** One journal movement's rows; its entries must sum to zero. */
export function journalRows(newId: IdGenerator, kind: string, entries: Entry[], at: string): JournalRow[] {
  const sum = entries.reduce((s, e) => s + e.amountMicros, 0);
  // A movement that does not sum to zero is a bug, not a runtime condition: crash loudly.
  if (sum !== 0) throw new Error(`journal movement ${kind} does not sum to zero (${sum})`);
  const movementId = newId("mov");
  return entries
    .filter((e) => e.amountMicros !== 0)
    .map((e) => ({ movement_id: movementId, kind, account: e.account, project_id: e.projectId, amount_micros: e.amountMicros, created_at: at }));
}

/** One journal movement as a statement: its entries, which must sum to zero. */
export function journalStatement(db: Kysely<Database>, newId: IdGenerator, kind: string, entries: Entry[], at: string): CompiledQuery {
  return db.insertInto("journal_entries").values(journalRows(newId, kind, entries, at)).compile();
}

/** Writes one movement in the open transaction `trx`. */
export async function writeJournal(trx: Kysely<Database>, newId: IdGenerator, kind: string, entries: Entry[], at: string): Promise<void> {
  await trx.executeQuery(journalStatement(trx, newId, kind, entries, at));
}
