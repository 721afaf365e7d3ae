// The writes a request makes before any payment row exists (an idempotency key's claim, its release or kept reply, a
// quote), their housekeeping, the small state the request thread's loops keep (`kv`: the deposit watcher's cursor) and
// the token writes an agent makes (a child token, a revocation, controls) go through the ledger's writes, on real SQLite
// and PostgreSQL. While another connection
// holds the write lock (on SQLite: the settlement thread, another process), they wait without stopping the process,
// and finish once it is let go. On SQLite a plain statement slept in SQLite's busy handler on the event loop instead:
// here the lock's holder, in this process, could then never let go, and the write failed with SQLITE_BUSY.
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { tableRows } from "../src/ledger/testing.ts";
import { createToken } from "../src/services/tokens.ts";
import { newId, systemClock } from "../src/ids.ts";
import { type TestLedger, createTestLedger, dialects } from "./support/db.ts";

const quote = (id: string, expiresAt: string) => ({
  id,
  project_id: "prj_q",
  token_id: "tok_q",
  url: "https://api.example.com/",
  method: "GET",
  body_hash: "",
  protocol: "x402",
  scheme: "exact",
  network: "base",
  asset: "usdc",
  pay_to: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
  amount_micros: 1,
  verdict: "would_pay",
  refusal_code: null,
  created_at: "2026-01-01T00:00:00.000Z",
  expires_at: expiresAt,
});

describe.each(dialects)("writes before a payment row (%s)", (dialect) => {
  let t: TestLedger;
  beforeAll(async () => {
    t = await createTestLedger(dialect);
  });
  afterAll(() => t?.drop());

  /** Takes the database's write lock (SQLite) or both tables' (PostgreSQL) from another connection, until let go. */
  async function lockWrites(): Promise<{ release(): Promise<void> }> {
    if (dialect === "sqlite") {
      const other = new Database(t.sqlitePath!);
      other.exec("begin immediate");
      return { release: async () => void (other.exec("commit"), other.close()) };
    }
    const other = new pg.Client({ connectionString: t.url });
    await other.connect();
    await other.query("begin");
    await other.query("lock table idempotency_keys, quotes, kv, api_tokens, token_lineage, audit_log in exclusive mode");
    return { release: async () => void (await other.query("commit"), await other.end()) };
  }

  test("behavior: a claim, a quote, a release, and a kept reply wait for another connection's write lock and then finish", async () => {
    const now = "2026-01-01T00:00:00.000Z";
    const until = "2026-01-01T00:01:00.000Z";
    const keys = t.ledger.idempotencyKeys;
    expect(await keys.claim("prj_q", "released", "tok-1", until, now)).toEqual({ kind: "claimed" });
    expect(await keys.claim("prj_q", "kept", "tok-2", until, now)).toEqual({ kind: "claimed" });

    const lock = await lockWrites();
    let settled = 0;
    const writes = [
      keys.claim("prj_q", "new", "tok-3", until, now),
      keys.release("prj_q", "released", "tok-1"),
      keys.keepReply("prj_q", "kept", "tok-2", '{"ok":true}', until),
      t.ledger.quotes.insert(quote("quo_1", "2026-01-01T00:05:00.000Z")),
    ].map((p) => p.finally(() => settled++));
    // The lock's holder lets go on a timer of this process: it fires only if the writes do not hold up the event loop.
    await new Promise((r) => setTimeout(r, 150));
    expect(settled).toBe(0);
    await lock.release();
    const [claimed] = await Promise.all(writes);
    expect(claimed).toEqual({ kind: "claimed" });
    const rows = await tableRows(t.ledger, "idempotency_keys");
    expect(rows.map((r) => [r.key, r.state]).sort()).toEqual([
      ["kept", "reply"],
      ["new", "running"],
    ]);
    expect((await t.ledger.quotes.get("prj_q", "quo_1"))?.amount_micros).toBe(1);
  });

  test("behavior: kv rows are set, claimed and deleted while another connection's write lock is held, once it is let go", async () => {
    await t.ledger.kv.set("cursor", "1");
    await t.ledger.kv.set("gone", "x");
    const lock = await lockWrites();
    let settled = 0;
    const writes = [t.ledger.kv.set("cursor", "2"), t.ledger.kv.claim("first", "a"), t.ledger.kv.delete("gone")].map((p) => p.finally(() => settled++));
    await new Promise((r) => setTimeout(r, 150));
    expect(settled).toBe(0);
    await lock.release();
    const [, claimed] = await Promise.all(writes);
    expect(claimed).toBe("a");
    expect(await t.ledger.kv.claim("first", "b")).toBe("a");
    expect([await t.ledger.kv.get("cursor"), await t.ledger.kv.get("gone")]).toEqual(["2", undefined]);
  });

  test("behavior: a child token, its parent's controls and a revocation are written while another connection's write lock is held, once it is let go", async () => {
    const project = await t.ledger.projects.create({ name: "tokens", plan: "free" });
    const parent = await createToken({ ledger: t.ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read", "pay", "delegate"], mode: "test" });
    const doomed = await createToken({ ledger: t.ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read"], mode: "test" });
    const actor = { id: parent.id, name: "parent", role: null, ip: "127.0.0.1" };
    const childId = `tok_child_${dialect}`;
    const lock = await lockWrites();
    let settled = 0;
    const writes = [
      t.ledger.tokens.insertChild(parent.id, { id: childId, project_id: project.id, token_hash: `h_${childId}`, display_prefix: "aw_test_chld", permissions: "read", created_at: new Date().toISOString(), expires_at: null, revoked_at: null, name: "child" }, actor, (_p, active) => ({ spending_controls: null, expires_at: null, allowance_micros: active === 0 ? 5_000_000 : null })),
      t.ledger.tokens.setSpendingControls("token", parent.id, JSON.stringify({ spending_limits: [] }), actor),
      t.ledger.tokens.revoke(doomed.id, actor),
    ].map((p) => p.finally(() => settled++));
    await new Promise((r) => setTimeout(r, 150));
    expect(settled).toBe(0);
    await lock.release();
    const [, controlled, revoked] = await Promise.all(writes);
    expect([controlled, revoked]).toEqual([true, true]);
    expect(await t.ledger.tokens.get(childId)).toMatchObject({ parent_id: parent.id, depth: 1, allowance_micros: 5_000_000 });
    expect((await t.ledger.tokens.get(doomed.id))?.revoked_at).not.toBeNull();
    expect((await t.ledger.audit.list({ projectId: project.id, limit: 10 })).map((e) => e.action).sort()).toEqual(["token.controls_changed", "token.created", "token.revoked"]);
  });

  test("behavior: pruning removes at most the asked number of expired keys, oldest first, and expired quotes only", async () => {
    const keys = t.ledger.idempotencyKeys;
    for (const [key, until] of [
      ["old-1", "2026-02-01T00:00:01.000Z"],
      ["old-2", "2026-02-01T00:00:02.000Z"],
      ["old-3", "2026-02-01T00:00:03.000Z"],
      ["live", "2026-02-02T00:00:00.000Z"],
    ]) {
      expect(await keys.claim("prj_p", key!, `tok-${key}`, until!, "2026-02-01T00:00:00.000Z")).toEqual({ kind: "claimed" });
    }
    await t.ledger.quotes.insert(quote("quo_old", "2026-02-01T00:00:00.000Z"));
    await t.ledger.quotes.insert(quote("quo_live", "2026-02-03T00:00:00.000Z"));
    const lock = await lockWrites();
    const pruned = Promise.all([keys.pruneExpired("2026-02-01T12:00:00.000Z", 2), t.ledger.quotes.prune("2026-02-01T12:00:00.000Z")]);
    setTimeout(() => void lock.release(), 100);
    // The keys and quotes of the first case expired long before: the first prune takes the two oldest of them all.
    expect(await pruned).toEqual([2, 2]);
    const left = (await tableRows(t.ledger, "idempotency_keys")).filter((r) => r.project_id === "prj_p").map((r) => r.key).sort();
    expect(left).toEqual(["live", "old-1", "old-2", "old-3"]);
    expect(await keys.pruneExpired("2026-02-01T12:00:00.000Z", 2)).toBe(2);
    expect(await keys.pruneExpired("2026-02-01T12:00:00.000Z", 10)).toBe(1);
    expect((await tableRows(t.ledger, "idempotency_keys")).map((r) => r.key)).toEqual(["live"]);
    expect(await t.ledger.quotes.get("prj_q", "quo_live")).toBeDefined();
    expect(await t.ledger.quotes.get("prj_q", "quo_old")).toBeUndefined();
  });
});
