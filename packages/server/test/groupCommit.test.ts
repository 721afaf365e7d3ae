// Group commit on a real SQLite file: writes submitted in one turn share one commit, a failing write
// rolls back alone, and no caller hears of its write before it is durable. Then the ledger's holds on
// both databases through it: concurrent holds against a balance that covers some of them.
import SQLite from "better-sqlite3";
import { CompiledQuery } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import { createGroupCommit } from "../src/ledger/groupCommit.ts";
import { createLogSync } from "../src/ledger/logSync.ts";
import { type NewPayment } from "../src/ledger/payments.ts";
import { verifyLedger } from "../src/ledger/verify.ts";
import { newId, systemClock } from "../src/ids.ts";
import { createToken } from "../src/services/tokens.ts";
import { hashToken } from "../src/tokens.ts";
import { createTestDb, dialects, ledgerOn, openWalTable, type TestDb } from "./support/db.ts";
import { usdcPayment } from "./support/holds.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function openFile(opts: { quietMs?: number; busyTimeoutMs?: number; heldSyncs?: ((err: NodeJS.ErrnoException | null) => void)[] } = {}) {
  const { path, sqlite, db, close } = openWalTable("aw-group-");
  cleanups.push(close);
  const executed: string[] = [];
  const statement = (text: string) => {
    executed.push(text);
    return sqlite.prepare(text);
  };
  const held = opts.heldSyncs;
  const logSync = held ? createLogSync(`${path}-wal`, { sync: (_fd, done) => void held.push(done) }) : undefined;
  if (logSync) cleanups.push(() => logSync.close());
  return { path, db, group: createGroupCommit(db, statement, { ...opts, logSync }), executed };
}

const insert = (v: string) => CompiledQuery.raw("insert into t (v) values (?) returning id", [v]);

describe("group commit", () => {
  test("behavior: writes submitted in one turn share one commit, and each gets its own result", async () => {
    const { group, executed } = openFile();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => group.write((run) => run<{ id: number }>(insert(`v${i}`))[0]!.id)));
    expect(new Set(results).size).toBe(20);
    expect(executed.filter((s) => s === "commit")).toHaveLength(1);
    expect(executed.filter((s) => s === "begin immediate")).toHaveLength(1);
  });

  test("behavior: when the path is quiet a write commits at once; when busy it waits for the end of the turn", async () => {
    const quiet = openFile({ quietMs: -1 }); // every write finds the path quiet
    const busy = openFile({ quietMs: Number.POSITIVE_INFINITY }); // every write finds it busy
    const order: string[] = [];
    setImmediate(() => order.push("end of turn"));
    await quiet.group.write((run) => run(insert("q")));
    order.push("quiet write committed");
    await new Promise((r) => setImmediate(r));
    setImmediate(() => order.push("end of turn"));
    await busy.group.write((run) => run(insert("b")));
    order.push("busy write committed");
    expect(order).toEqual(["quiet write committed", "end of turn", "end of turn", "busy write committed"]);
  });

  test("error: a write that throws rolls back alone; the others of its batch commit", async () => {
    const { path, group } = openFile();
    const outcomes = await Promise.allSettled([
      group.write((run) => run(insert("a"))),
      group.write((run) => {
        run(insert("b"));
        run(insert("a")); // unique violation after a first insert: both of this write's rows go
      }),
      group.write((run) => run(insert("c"))),
    ]);
    expect(outcomes.map((o) => o.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(String((outcomes[1] as PromiseRejectedResult).reason)).toContain("UNIQUE");
    const other = new SQLite(path, { readonly: true });
    expect(other.prepare("select v from t order by v").pluck().all()).toEqual(["a", "c"]);
    other.close();
  });

  test("behavior: a write's promise resolves only once another connection can read it", async () => {
    const { path, group } = openFile();
    const other = new SQLite(path, { readonly: true });
    cleanups.push(() => void other.close());
    const seen: number[] = [];
    await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        group.write((run) => run(insert(`d${i}`))).then(() => seen.push(other.prepare("select count(*) from t").pluck().get() as number)),
      ),
    );
    expect(seen).toEqual([5, 5, 5, 5, 5]);
  });

  test("behavior: a write asked for with durable: false is answered at its commit; a durable one of its batch waits for the log's sync, and a batch of such writes alone asks for none", async () => {
    const heldSyncs: ((err: NodeJS.ErrnoException | null) => void)[] = [];
    const { path, group } = openFile({ heldSyncs });
    const other = new SQLite(path, { readonly: true });
    cleanups.push(() => void other.close());
    const answered: string[] = [];
    const durable = group.write((run) => run(insert("disk"))).then(() => answered.push("disk"));
    const atCommit = group.write((run) => run(insert("commit")), { durable: false }).then(() => answered.push("commit"));
    await atCommit;
    expect(answered).toEqual(["commit"]);
    expect(other.prepare("select count(*) from t").pluck().get()).toBe(2);
    expect(heldSyncs).toHaveLength(1);
    heldSyncs.shift()!(null);
    await durable;
    expect(answered).toEqual(["commit", "disk"]);
    // Alone, such writes commit and are answered with no sync of the log.
    await Promise.all([group.write((run) => run(insert("c2")), { durable: false }), group.write((run) => run(insert("c3")), { durable: false })]);
    expect(heldSyncs).toHaveLength(0);
  });

  test("error: when the log's sync fails, only the writes that waited for it fail; one answered at its commit stays answered", async () => {
    const heldSyncs: ((err: NodeJS.ErrnoException | null) => void)[] = [];
    const { group } = openFile({ heldSyncs });
    const durable = group.write((run) => run(insert("disk")));
    const atCommit = group.write((run) => run(insert("commit")), { durable: false });
    await expect(atCommit).resolves.toEqual([{ id: 2 }]);
    heldSyncs.shift()!(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    await expect(durable).rejects.toThrow(/EIO/);
  });

  test("behavior: writes submitted while a batch commits go in the next batch", async () => {
    const { group, executed } = openFile();
    const first = group.write((run) => run(insert("x1")));
    await first;
    await Promise.all([group.write((run) => run(insert("x2"))), group.write((run) => run(insert("x3")))]);
    expect(executed.filter((s) => s === "commit")).toHaveLength(2);
  });

  test("behavior: while another connection writes, the batch waits without blocking the event loop, then commits", async () => {
    const { path, group, executed } = openFile();
    const other = new SQLite(path);
    cleanups.push(() => void other.close());
    other.prepare("begin immediate").run();
    other.prepare("insert into t (v) values ('other')").run();
    let committed = false;
    const write = group.write((run) => run(insert("mine"))).then(() => (committed = true));
    // Timers keep firing while the write waits: SQLite's own busy wait would have frozen them.
    let ticks = 0;
    for (let i = 0; i < 20; i++) {
      await new Promise((r) => setTimeout(r, 2));
      ticks++;
    }
    expect(ticks).toBe(20);
    expect(committed).toBe(false);
    // Writes that arrive meanwhile join the waiting batch.
    const late = group.write((run) => run(insert("late")));
    other.prepare("commit").run();
    await Promise.all([write, late]);
    expect(executed.filter((s) => s === "commit")).toHaveLength(1);
    const reader = new SQLite(path, { readonly: true });
    expect(reader.prepare("select v from t order by id").pluck().all()).toEqual(["other", "mine", "late"]);
    reader.close();
  });

  test("error: a batch that cannot take the lock within the busy timeout fails whole, and the next one commits", async () => {
    const { path, group } = openFile({ busyTimeoutMs: 40 });
    const other = new SQLite(path);
    cleanups.push(() => void other.close());
    other.prepare("begin immediate").run();
    const outcomes = await Promise.allSettled([group.write((run) => run(insert("a"))), group.write((run) => run(insert("b")))]);
    expect(outcomes.map((o) => o.status)).toEqual(["rejected", "rejected"]);
    expect((outcomes[0] as PromiseRejectedResult).reason).toMatchObject({ code: "SQLITE_BUSY" });
    other.prepare("rollback").run();
    await group.write((run) => run(insert("c")));
    const reader = new SQLite(path, { readonly: true });
    expect(reader.prepare("select v from t").pluck().all()).toEqual(["c"]);
    reader.close();
  });

  test("behavior: a Kysely transaction open across an await is never joined by a batch", async () => {
    const { db, group, path } = openFile();
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const trx = db.transaction().execute(async (t) => {
      await t.insertInto("t").values({ v: "in-trx" }).execute();
      await held;
      throw new Error("roll back");
    });
    const write = group.write((run) => run(insert("outside")));
    await new Promise((r) => setTimeout(r, 20));
    release();
    await expect(trx).rejects.toThrow("roll back");
    await write;
    const other = new SQLite(path, { readonly: true });
    expect(other.prepare("select v from t").pluck().all()).toEqual(["outside"]);
    other.close();
  });
});

test("behavior: the token lookup never reads the uncommitted rows of a transaction open across an await", async () => {
  const db = await createTestDb("sqlite");
  cleanups.push(() => db.drop());
  const ledger = ledgerOn(db);
  const project = await ledger.projects.create({ name: "p", plan: "free" });
  const { token } = await createToken({ ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read"], mode: "test" });
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  const trx = db.db.transaction().execute(async (t) => {
    await t.updateTable("balances").set({ available_micros: 999 }).where("project_id", "=", project.id).execute();
    await held;
    throw new Error("roll back");
  });
  await new Promise((r) => setTimeout(r, 10));
  const lookup = ledger.tokens.findByHash(hashToken(token));
  // The lookup's turn (the next one) comes while the transaction is still open.
  await new Promise((r) => setTimeout(r, 10));
  release();
  await expect(trx).rejects.toThrow("roll back");
  expect((await lookup)!.available_micros).toBe(0);
});

describe.each(dialects)("concurrent holds on %s", (dialect) => {
  const holdOf = (projectId: string, key: string | null): NewPayment =>
    usdcPayment(projectId, 1_000_000, 20_000, { idempotencyKey: key, railState: { stage: "held" }, inFlightUntil: new Date(Date.now() + 60_000).toISOString() });

  async function fundedProject(db: TestDb, micros: number) {
    const ledger = ledgerOn(db);
    const project = await ledger.projects.create({ name: "p", plan: "free" });
    await ledger.projects.setWalletAddress(project.id, "0x00000000000000000000000000000000000000a1");
    await ledger.deposits.recordSeen({ chain: "base", txHash: `0x${"1".repeat(64)}`, logIndex: 0, projectId: project.id, toAddress: "0x00000000000000000000000000000000000000a1", fromAddress: "0x00000000000000000000000000000000000000b2", amountMicros: micros, blockNumber: 1, blockHash: `0x${"2".repeat(64)}` });
    await ledger.deposits.credit({ chain: "base", txHash: `0x${"1".repeat(64)}`, logIndex: 0 });
    return { ledger, projectId: project.id };
  }

  test("behavior: 50 holds at once against a balance for exactly 7 → 7 held, 43 insufficient, ledger verifies", async () => {
    const db = await createTestDb(dialect);
    cleanups.push(() => db.drop());
    const { ledger, projectId } = await fundedProject(db, 7 * 1_020_000);
    const results = await Promise.all(Array.from({ length: 50 }, () => ledger.payments.hold(holdOf(projectId, null))));
    expect(results.filter((r) => r.kind === "held")).toHaveLength(7);
    expect(results.filter((r) => r.kind === "insufficient")).toHaveLength(43);
    const balance = (await ledger.balances.get(projectId))!;
    expect(balance.available_micros).toBe(0);
    expect(balance.tx_count).toBe(1 + 14);
    expect((await verifyLedger(db.db)).ok).toBe(true);
  });

  test("behavior: holds with one idempotency key in one batch → one held, the rest duplicates of it", async () => {
    const db = await createTestDb(dialect);
    cleanups.push(() => db.drop());
    const { ledger, projectId } = await fundedProject(db, 100 * 1_020_000);
    const results = await Promise.all(Array.from({ length: 10 }, () => ledger.payments.hold(holdOf(projectId, "same-key"))));
    const held = results.filter((r) => r.kind === "held");
    expect(held).toHaveLength(1);
    for (const r of results.filter((r) => r.kind === "duplicate")) expect(r.kind === "duplicate" && r.payment.id).toBe(held[0]!.kind === "held" && held[0]!.payment.id);
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(99 * 1_020_000);
    expect((await verifyLedger(db.db)).ok).toBe(true);
  });
});
