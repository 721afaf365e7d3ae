// The group commit's durability on a real SQLite file (groupCommit.ts + logSync.ts): a batch commits
// with synchronous=NORMAL and its callers hear of it only after an fdatasync of the log that started
// after the commit. The sync is held by the test to see what waits for it; one test lets the real
// fdatasync run.
import SQLite from "better-sqlite3";
import { CompiledQuery } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import { createGroupCommit } from "../src/ledger/groupCommit.ts";
import { SYNCS_IN_FLIGHT_MAX, createLogSync } from "../src/ledger/logSync.ts";
import { openWalTable } from "./support/db.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

type Done = (err: NodeJS.ErrnoException | null) => void;

/** A group commit whose log syncs wait for the test: `syncs` lists the syncs asked for, in order. */
function openFile(opts: { realSync?: boolean } = {}) {
  const { path, sqlite, db, close } = openWalTable("aw-logsync-");
  const syncs: Done[] = [];
  const logSync = createLogSync(`${path}-wal`, opts.realSync ? {} : { sync: (_fd, done) => void syncs.push(done) });
  const statement = (text: string) => sqlite.prepare(text);
  cleanups.push(async () => {
    await close();
    logSync.close();
  });
  const count = () => {
    const reader = new SQLite(path, { readonly: true });
    const n = reader.prepare("select count(*) from t").pluck().get() as number;
    reader.close();
    return n;
  };
  return { sqlite, db, logSync, syncs, count, group: createGroupCommit(db, statement, { logSync }) };
}

const insert = (v: string) => CompiledQuery.raw("insert into t (v) values (?) returning id", [v]);
/** Lets timers, immediates and the batch's own awaits run. */
const settle = () => new Promise((r) => setTimeout(r, 20));
function tracked<T>(p: Promise<T>) {
  const t = { done: false, value: undefined as T | undefined, error: undefined as unknown };
  p.then((v) => Object.assign(t, { done: true, value: v }), (e) => Object.assign(t, { done: true, error: e }));
  return t;
}

describe("group commit made durable by a sync of the log", () => {
  test("behavior: a batch is committed at once, but its callers are answered only once the sync after the commit has ended", async () => {
    const { group, syncs, count } = openFile();
    const writes = [tracked(group.write((run) => run(insert("a")))), tracked(group.write((run) => run(insert("b"))))];
    await settle();
    expect(count()).toBe(2); // committed: another connection reads both rows
    expect(syncs).toHaveLength(1);
    expect(writes.map((w) => w.done)).toEqual([false, false]);
    syncs[0]!(null);
    await settle();
    expect(writes.map((w) => w.done)).toEqual([true, true]);
    expect(writes[0]!.error).toBeUndefined();
  });

  test("behavior: a batch committed while a sync is under way starts a second sync at once; with two under way, later batches wait for the next, which covers them all", async () => {
    const { group, syncs, logSync } = openFile();
    expect(SYNCS_IN_FLIGHT_MAX).toBe(2);
    const first = tracked(group.write((run) => run(insert("a"))));
    await settle();
    const second = tracked(group.write((run) => run(insert("b"))));
    await settle();
    // The second commit did not wait for the first sync to end: its own started at once.
    expect(syncs).toHaveLength(2);
    const third = tracked(group.write((run) => run(insert("c"))));
    await settle();
    const fourth = tracked(group.write((run) => run(insert("d"))));
    await settle();
    expect(syncs).toHaveLength(2);
    // The second sync ends first: it answers the second batch only (it started before the others committed).
    syncs[1]!(null);
    await settle();
    expect([first.done, second.done, third.done, fourth.done]).toEqual([false, true, false, false]);
    // One sync, started after the third and fourth commits, answers both.
    expect(syncs).toHaveLength(3);
    syncs[2]!(null);
    await settle();
    expect([first.done, third.done, fourth.done]).toEqual([false, true, true]);
    syncs[0]!(null);
    await settle();
    expect(first.done).toBe(true);
    expect(logSync.syncs).toBe(3);
  });

  test("behavior: after each batch the connection syncs at its own commits again (synchronous=FULL)", async () => {
    const { sqlite, group, syncs } = openFile();
    const w = group.write((run) => run(insert("a")));
    await settle();
    expect(sqlite.pragma("synchronous", { simple: true })).toBe(2);
    syncs[0]!(null);
    await w;
    expect(sqlite.pragma("synchronous", { simple: true })).toBe(2);
  });

  test("error: a failed sync fails its batch's callers and every later write: durability is unknown from then on", async () => {
    const { group, syncs } = openFile();
    const w = tracked(group.write((run) => run(insert("a"))));
    await settle();
    syncs[0]!(Object.assign(new Error("EIO: i/o error, fdatasync"), { code: "EIO" }));
    await settle();
    expect(w.done).toBe(true);
    expect(String(w.error)).toMatch(/could not be made durable.*EIO/);
    await expect(group.write((run) => run(insert("b")))).rejects.toThrow(/could not be made durable/);
  });

  test("behavior: with the real fdatasync, 40 writes at once are answered after one commit and its sync", async () => {
    const { group, logSync, count } = openFile({ realSync: true });
    const ids = await Promise.all(Array.from({ length: 40 }, (_, i) => group.write((run) => run<{ id: number }>(insert(`r${i}`))[0]!.id)));
    expect(new Set(ids).size).toBe(40);
    expect(count()).toBe(40);
    expect(logSync.syncs).toBe(1);
  });
});
