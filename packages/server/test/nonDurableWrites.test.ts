// A write answered before it is on disk (AtomicWrites.writeOne with `durable: false`, used for the x402 paid
// path's last write) on PostgreSQL: `synchronous_commit` is off for that write's own transaction only, never for
// the pooled connection's later work. SQLite's side (answered at the batch's commit) is in logSync.test.ts.
import { CompiledQuery } from "kysely";
import { afterAll, beforeAll, expect, test } from "vitest";
import { AtomicWrites } from "../src/ledger/atomicWrites.ts";
import { type TestDb, createTestDb } from "./support/db.ts";

let t: TestDb;
beforeAll(async () => {
  t = await createTestDb("postgres");
});
afterAll(async () => t?.drop());

const setting = CompiledQuery.raw("select current_setting('synchronous_commit') as v") as CompiledQuery<{ v: string }>;

test("behavior: on PostgreSQL a write that need not wait for the disk commits with synchronous_commit off, and only that write", async () => {
  const writes = new AtomicWrites(t.db, undefined);
  const during = await writes.writeOne(setting, { durable: false });
  expect(during[0]!.v).toBe("off");
  // Every connection of the pool, after it: the setting was local to the write's transaction.
  const after = await Promise.all(Array.from({ length: 8 }, () => writes.writeOne(setting)));
  expect(after.map((r) => r[0]!.v)).toEqual(Array(8).fill("on"));
});
