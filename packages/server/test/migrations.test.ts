import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "kysely";
import { afterAll, describe, expect, test } from "vitest";
import { openDb } from "../src/ledger/db.ts";
import { migrateToLatest } from "../src/ledger/migrations.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { createPgSchema, dialects, ledgerOn, postgresUrl } from "./support/db.ts";

describe.each(dialects)("migration 0002 on a database with history (%s)", (dialect) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
  });

  test("numbers existing transactions 1..N per project by creation time, and pages read them newest first", async () => {
    let opened;
    if (dialect === "sqlite") {
      const dir = mkdtempSync(join(tmpdir(), "aw-mig-"));
      opened = openDb({ kind: "sqlite", path: join(dir, "db.sqlite") });
      cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    } else {
      const s = await createPgSchema();
      opened = openDb({ kind: "postgres", url: s.url });
      cleanups.push(s.drop);
    }
    cleanups.unshift(() => opened.close());
    expect(await migrateToLatest(opened.db, opened.dialect, "0001_ledger")).toEqual(["0001_ledger"]);
    // History written as the service wrote it before positions existed: created_at out of insertion order.
    const projects = ["prj_a", "prj_b"];
    for (const [i, p] of projects.entries()) {
      await opened.db.insertInto("projects").values({ id: p, name: p, plan: "free", paused: 0, wallet_index: i, wallet_address: null, created_at: "2026-01-01T00:00:00.000Z" }).execute();
      await opened.db.insertInto("balances").values({ project_id: p, available_micros: 0, held_micros: 0, pending_micros: 0, total_funded_micros: 0, total_spent_micros: 0, tx_count: 5 }).execute();
      for (const minute of [3, 1, 4, 1, 5]) {
        await (opened.db as any)
          .insertInto("transactions")
          .values({ id: `txn_${p}_${minute}_${Math.random().toString(36).slice(2, 8)}`, project_id: p, payment_id: null, type: "fund", status: "completed", amount: minute, currency: "usdc", description: null, merchant_name: null, created_at: `2026-01-01T00:0${minute}:00.000Z`, completed_at: null })
          .execute();
      }
    }
    expect(await migrateToLatest(opened.db, opened.dialect, "0002_transaction_positions")).toEqual(["0002_transaction_positions"]);
    // The ledger of today reads the schema of today: the later migrations add what it selects.
    await migrateToLatest(opened.db, opened.dialect);
    const ledger = ledgerOn(opened);
    for (const p of projects) {
      const all = await ledger.balances.listTransactions(p, 50, 0);
      expect(all.rows.map((r) => r.amount)).toEqual([5, 4, 3, 1, 1]);
      expect((await ledger.balances.listTransactions(p, 2, 2)).rows.map((r) => r.amount)).toEqual([3, 1]);
    }
    const v = await verifyLedger(opened.db);
    expect(v.problems.filter((x) => x.check === "positions_contiguous")).toEqual([]);
  });
});

// Migrating one schema never reads another's catalog: deployments (or test files) beside it may be creating,
// changing and dropping their own schemas at that moment. Kysely's own check for its tables read the columns of
// every schema and failed when one changed under it (3F000, 42703): bounded renames beside bounded migrations.
describe("migrations beside other schemas' changes (postgres)", () => {
  test("migrations succeed while another schema's columns are renamed", async () => {
    const churn = openDb({ kind: "postgres", url: postgresUrl(), poolMax: 3 });
    const other = `churn_${process.pid}_${Date.now()}`;
    const columns = 200;
    await sql.raw(`create schema ${other}; create table ${other}.t (${Array.from({ length: columns }, (_, j) => `c${j} integer`).join(", ")})`).execute(churn.db);
    let stop = false;
    // Renames every column of another schema's table back and forth, each rename committed on its own.
    const churner = async (k: number) => {
      for (let i = 0; i < 300 && !stop; i++) {
        const j = (k * 100 + i) % columns;
        await sql.raw(`alter table ${other}.t rename column c${j} to r${j}`).execute(churn.db);
        await sql.raw(`alter table ${other}.t rename column r${j} to c${j}`).execute(churn.db);
      }
    };
    const churning = Promise.all([churner(0), churner(1)]);
    const failures: string[] = [];
    try {
      for (let i = 0; i < 6; i++) {
        const mine = await createPgSchema();
        const opened = openDb({ kind: "postgres", url: mine.url, poolMax: 2 });
        try {
          await migrateToLatest(opened.db, "postgres");
        } catch (err) {
          failures.push((err as Error).message);
        } finally {
          await opened.close();
          await mine.drop();
        }
      }
    } finally {
      stop = true;
      await churning;
      await sql.raw(`drop schema ${other} cascade`).execute(churn.db);
      await churn.close();
    }
    expect(failures).toEqual([]);
  });
});
