/**
 * A bank payment's whole account number is kept only sealed, and only until its payout is created
 * (domain/bankAccount.ts): every final status forgets it (a trigger, migration 0023), rows written before are
 * masked by the migration, the sandbox off-ramp keeps an outcome instead of the number, and the SQLite file,
 * its WAL and shared memory are created readable by their owner only. The whole database is searched: every
 * text column on PostgreSQL, every byte of the SQLite file and its WAL.
 */
import { existsSync, readFileSync, statSync } from "node:fs";
import { sql } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import { forgetBankAccount, openBankRecipient, sealBankRecipient } from "../../src/domain/bankAccount.ts";
import { migrateToLatest } from "../../src/ledger/migrations.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { dialects, createTestLedger } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { setAvailable } from "../../src/ledger/testing.ts";

const KEY = new Uint8Array(32).fill(9);
const NUMBERS = ["918273645501", "918273645502", "918273645503", "918273645504", "918273645505"];

/** Every place the database could keep `needle`: each text column of each table (PostgreSQL), or the file and its WAL's bytes (SQLite). */
async function whereKept(db: any, dialect: "sqlite" | "postgres", path: string | undefined, schema: string | undefined, needle: string): Promise<string[]> {
  const found: string[] = [];
  if (dialect === "sqlite") {
    for (const f of [path!, `${path}-wal`]) if (existsSync(f) && readFileSync(f).includes(Buffer.from(needle))) found.push(f);
    return found;
  }
  const cols = (await sql<{ table_name: string; column_name: string }>`select table_name, column_name from information_schema.columns where table_schema = ${schema} and data_type in ('text', 'character varying', 'jsonb', 'json')`.execute(db)).rows;
  for (const c of cols) {
    const n = (await sql<{ n: number }>`select count(*)::int as n from ${sql.table(c.table_name)} where ${sql.ref(c.column_name)}::text like ${`%${needle}%`}`.execute(db)).rows[0]!.n;
    if (n > 0) found.push(`${c.table_name}.${c.column_name}`);
  }
  return found;
}

describe.each(dialects)("bank account numbers at rest (%s)", (dialect) => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0)) await c();
  });
  /** A test database with a Ledger on it, migrated up to `migrateTo` (the latest by default), dropped after the test. */
  const testLedger = async (migrateTo?: string) => {
    const t = await createTestLedger(dialect, { migrateTo, dirPrefix: "aw-acct-" });
    cleanups.push(() => t.drop());
    return t;
  };

  test("behavior: held sealed; after denial, expiry, a provider's refusal and completion nothing keeps the whole number", async () => {
    const { db, ledger, sqlitePath: path, schema } = await testLedger();
    const project = await ledger.projects.create({ name: "p", plan: "free" });
    await setAvailable(ledger, project.id, 1_000_000_000);
    const ids: string[] = [];
    for (const n of NUMBERS.slice(0, 4)) {
      const full = JSON.stringify({ name: "Ann Lee", account_number: n, routing_number: "021000021" });
      const sealed = sealBankRecipient(KEY, project.id, full);
      const held = await ledger.payments.hold(usdcPayment(project.id, 1_000_000, 10_000, { rail: "fiat", railTxnType: "payment", currency: "usd", amountUnits: 100, feeUnits: 1, recipient: "Ann Lee", recipientJson: sealed }));
      if (held.kind !== "held") throw new Error(held.kind);
      ids.push(held.payment.id);
      // Stored sealed, opened for the payout with the deployment's key.
      const row = (await ledger.payments.getPayment(held.payment.id))!;
      expect(JSON.parse(row.recipientJson!).account_number).toBe(`****${n.slice(-4)}`);
      expect(openBankRecipient(KEY, project.id, row.recipientJson!).account_number).toBe(n);
      expect(() => openBankRecipient(new Uint8Array(32).fill(1), project.id, row.recipientJson!)).toThrow();
    }
    const [denied, expired, refused, completed] = ids as [string, string, string, string];
    await ledger.payments.resolve(denied, "failed", { failureCode: "approval_denied", failureReason: "denied" });
    await ledger.payments.resolve(expired, "failed", { failureCode: "approval_expired", failureReason: "expired" });
    await ledger.payments.resolve(refused, "failed", { failureCode: "payout_refused", failureReason: "refused" });
    // Completed: the rail forgot it when the payout was created; the final status would anyway.
    await ledger.payments.updatePayment(completed, { providerRef: "po_1", recipientJson: forgetBankAccount((await ledger.payments.getPayment(completed))!.recipientJson!) });
    await ledger.payments.resolve(completed, "completed");
    await ledger.checkpointWal().catch(() => undefined);
    for (const [i, id] of ids.entries()) {
      const row = (await ledger.payments.getPayment(id))!;
      expect(JSON.parse(row.recipientJson!)).toEqual({ name: "Ann Lee", routing_number: "021000021", account_number: `****${NUMBERS[i]!.slice(-4)}` });
    }
    for (const n of NUMBERS.slice(0, 4)) expect(await whereKept(db, dialect, path, schema, n)).toEqual([]);
  });

  test("behavior: the migration masks rows and sandbox payouts written before it, keeping open ones for their payout", async () => {
    const { db, ledger, sqlitePath: path, schema } = await testLedger("0022_spending_windows");
    const project = await ledger.projects.create({ name: "p", plan: "free" });
    await setAvailable(ledger, project.id, 1_000_000_000);
    const ids: string[] = [];
    for (const n of NUMBERS.slice(0, 4)) {
      const held = await ledger.payments.hold(usdcPayment(project.id, 1_000_000, 10_000, { rail: "fiat", railTxnType: "payment", currency: "usd", amountUnits: 100, feeUnits: 1, recipient: "Ann Lee", recipientJson: JSON.stringify({ name: "Ann Lee", account_number: n, routing_number: "021000021" }) }));
      if (held.kind !== "held") throw new Error(held.kind);
      ids.push(held.payment.id);
    }
    await ledger.payments.resolve(ids[0]!, "failed", { failureCode: "approval_denied", failureReason: "denied" });
    await ledger.payments.updatePayment(ids[1]!, { providerRef: "po_2" });
    await ledger.payments.resolve(ids[1]!, "completed");
    await ledger.payments.updatePayment(ids[2]!, { providerRef: "po_3", status: "processing" }); // payout created, still open
    await ledger.kv.set("sandbox_payout:po_x", JSON.stringify({ payoutId: "po_x", status: "processing", accountNumber: "2222000000", amountCents: 100 }));
    await ledger.kv.set("sandbox_payout:po_y", JSON.stringify({ payoutId: "po_y", status: "completed", accountNumber: NUMBERS[4], amountCents: 100 }));

    await migrateToLatest(db, dialect);
    await ledger.checkpointWal().catch(() => undefined);
    for (const i of [0, 1, 2]) expect(JSON.parse((await ledger.payments.getPayment(ids[i]!))!.recipientJson!).account_number).toBe(`****${NUMBERS[i]!.slice(-4)}`);
    // Open without a payout: still needed; the first process with the key seals it (deps.ts).
    expect(JSON.parse((await ledger.payments.getPayment(ids[3]!))!.recipientJson!).account_number).toBe(NUMBERS[3]);
    expect(await ledger.payments.openBankRecipientsInClear(10)).toEqual([expect.objectContaining({ id: ids[3] })]);
    expect(JSON.parse((await ledger.kv.get("sandbox_payout:po_x"))!)).toMatchObject({ outcome: "return", accountNumber: "****0000" });
    expect(JSON.parse((await ledger.kv.get("sandbox_payout:po_y"))!)).toMatchObject({ outcome: "complete", accountNumber: `****${NUMBERS[4]!.slice(-4)}` });
    if (dialect === "postgres") for (const n of [NUMBERS[0]!, NUMBERS[1]!, NUMBERS[2]!, NUMBERS[4]!]) expect(await whereKept(db, dialect, path, schema, n)).toEqual([]);
  });

  test.runIf(dialect === "sqlite")("behavior: the SQLite file, its WAL and shared memory are created 0600", async () => {
    const { sqlitePath: path } = await testLedger();
    for (const f of [path!, `${path}-wal`, `${path}-shm`]) expect((statSync(f).mode & 0o777).toString(8)).toBe("600");
  });
});
