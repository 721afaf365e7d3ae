/**
 * The database behind a ledger, for the ledger's own modules only (testing.ts, the tests' port, among them):
 * nothing else in the server reaches the connection (.dependency-cruiser.cjs forbids importing this module,
 * `kysely` or db.ts from outside ledger/), so every query lives here, under a name that says what it reads or writes.
 */
import type { Db } from "./db.ts";

const connections = new WeakMap<object, Db>();

/** Called by the Ledger's constructor: `ledger` runs its queries on `db`. */
export function attachDb(ledger: object, db: Db): void {
  connections.set(ledger, db);
}

/** The connection of a Ledger (tests read and break rows through ledger/testing.ts, which uses it). */
export function dbOf(ledger: object): Db {
  const db = connections.get(ledger);
  if (!db) throw new Error("not a ledger: no database attached");
  return db;
}
