/**
 * The return watch's state in the database (ledger/returnWatch.ts): one process at a time holds a
 * provider's watch, its cursor outlives the process, and an expired lease passes to another process.
 */
import { afterEach, describe, expect, test } from "vitest";
import { type TestDb, createTestDb, dialects, ledgerOn } from "../support/db.ts";

describe.each(dialects)("return watch lease and cursor (%s)", (dialect) => {
  let db: TestDb | undefined;
  afterEach(async () => {
    await db?.drop();
  });

  test("behavior: a second process gets no lease while the first holds it, and takes over the cursor once it expired", async () => {
    db = await createTestDb(dialect);
    let now = new Date("2026-11-25T12:00:00.000Z");
    const ledger = ledgerOn(db, () => now);
    const a = await ledger.returnWatch.claim("bridge", "proc-a", 60_000);
    expect(a).toEqual({ cursor_ms: null, sweep_from: null });
    expect(await ledger.returnWatch.claim("bridge", "proc-b", 60_000)).toBeUndefined();
    // Each provider has a watch of its own.
    expect(await ledger.returnWatch.claim("sandbox", "proc-b", 60_000)).toBeDefined();
    expect(await ledger.returnWatch.release("bridge", "proc-a", { cursor_ms: 1_700_000_000_000, sweep_from: null })).toBe(true);
    expect(await ledger.returnWatch.claim("bridge", "proc-b", 60_000)).toEqual({ cursor_ms: 1_700_000_000_000, sweep_from: null });
    // proc-b dies holding it: after the lease, proc-a takes over where proc-b's last pass left off.
    expect(await ledger.returnWatch.claim("bridge", "proc-a", 60_000)).toBeUndefined();
    now = new Date(now.getTime() + 60_001);
    expect(await ledger.returnWatch.claim("bridge", "proc-a", 60_000)).toEqual({ cursor_ms: 1_700_000_000_000, sweep_from: null });
    // The lease lost meanwhile, proc-b's late release stores nothing.
    expect(await ledger.returnWatch.release("bridge", "proc-b", { cursor_ms: 1, sweep_from: null })).toBe(false);
    expect(await ledger.returnWatch.release("bridge", "proc-a", { cursor_ms: 1_700_000_000_500, sweep_from: "2026-11-25T11:55:00.000Z" })).toBe(true);
    expect(await ledger.returnWatch.claim("bridge", "proc-b", 60_000)).toEqual({ cursor_ms: 1_700_000_000_500, sweep_from: "2026-11-25T11:55:00.000Z" });
  });
});
