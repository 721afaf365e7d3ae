// The token lookup every request makes: lookups asked for together are read by one statement (at most
// 32 tokens each), every caller gets its own token's row with its ancestors', and a revocation committed
// before a request arrives is seen by that request. On a real SQLite file and PostgreSQL.
import { type KyselyPlugin, sql } from "kysely";
import { afterEach, describe, expect, test } from "vitest";
import { newId, systemClock } from "../src/ids.ts";
import { createToken } from "../src/services/tokens.ts";
import { hashToken } from "../src/tokens.ts";
import { createTestDb, dialects, ledgerOn } from "./support/db.ts";
import { depositFundedProject } from "./support/holds.ts";

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe.each(dialects)("token lookups on %s", (dialect) => {
  async function setup() {
    const db = await createTestDb(dialect);
    cleanups.push(() => db.drop());
    let statements = 0;
    // Counts the statements run through this Kysely instance (a plugin sees every result).
    const counter: KyselyPlugin = { transformQuery: (a) => a.node, transformResult: async (a) => (statements++, a.result) };
    const ledger = ledgerOn({ db: db.db.withPlugin(counter), dialect: db.dialect });
    const deps = { ledger, clock: systemClock, newId };
    const project = await ledger.projects.create({ name: "p", plan: "free" });
    const other = await ledger.projects.create({ name: "q", plan: "pro" });
    const a = await createToken(deps, { projectId: project.id, permissions: ["read"], mode: "test" });
    const b = await createToken(deps, { projectId: other.id, permissions: ["read", "pay"], mode: "test" });
    const c = await createToken(deps, { projectId: project.id, permissions: ["read"], mode: "test" });
    return { ledger, project, other, a, b, c, statements: () => statements };
  }

  test("behavior: lookups of one turn share one statement and each caller gets its own token", async () => {
    const s = await setup();
    await s.ledger.tokens.revoke(s.c.id);
    const before = s.statements();
    const ask = (token: string, n: number) => Array.from({ length: n }, () => s.ledger.tokens.findByHash(hashToken(token)));
    const unknown = "aw_test_" + "0".repeat(38);
    const [as, bs, cs, us] = [ask(s.a.token, 20), ask(s.b.token, 10), ask(s.c.token, 5), ask(unknown, 5)];
    const rows = await Promise.all([...as, ...bs, ...cs, ...us]);
    expect(s.statements() - before).toBe(1);
    for (const r of rows.slice(0, 20)) expect(r).toMatchObject({ id: s.a.id, project_id: s.project.id, revoked_at: null, plan: "free" });
    for (const r of rows.slice(20, 30)) expect(r).toMatchObject({ id: s.b.id, project_id: s.other.id, permissions: "read,pay", plan: "pro" });
    for (const r of rows.slice(30, 35)) expect(r?.revoked_at).toEqual(expect.any(String));
    for (const r of rows.slice(35)) expect(r).toBeUndefined();
  });

  test("behavior: more distinct tokens than one statement holds are read in chunks of 32", async () => {
    const s = await setup();
    const before = s.statements();
    const hashes = Array.from({ length: 70 }, (_, i) => (i === 69 ? hashToken(s.a.token) : hashToken(`aw_test_${String(i).padStart(38, "x")}`)));
    const rows = await Promise.all(hashes.map((h) => s.ledger.tokens.findByHash(h)));
    expect(s.statements() - before).toBe(3); // 32 + 32 + 6
    expect(rows.slice(0, 69).every((r) => r === undefined)).toBe(true);
    expect(rows[69]?.id).toBe(s.a.id);
  });

  test("behavior: a child token comes with its ancestors, nearest first, in the same one statement; an operator's token with none", async () => {
    const s = await setup();
    const actor = { id: s.a.id, name: "parent", role: null, ip: null };
    const childOf = async (parentId: string, allowance: number, controls: string | null) => {
      const id = newId("tok");
      await s.ledger.tokens.insertChild(parentId, { id, project_id: s.project.id, token_hash: `hash-${id}`, display_prefix: "aw_test_x", permissions: "read,pay,delegate", created_at: new Date().toISOString(), expires_at: null, revoked_at: null }, actor, () => ({ spending_controls: controls, expires_at: null, allowance_micros: allowance }));
      return id;
    };
    const daily = JSON.stringify({ limits: [{ interval: "daily", amountMicros: 7 }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null });
    const child = await childOf(s.a.id, 30, daily);
    const grandchild = await childOf(child, 20, null);
    const leaf = await childOf(grandchild, 10, null);
    const before = s.statements();
    const [l, g, a] = await Promise.all([s.ledger.tokens.findByHash(`hash-${leaf}`), s.ledger.tokens.findByHash(`hash-${grandchild}`), s.ledger.tokens.findByHash(hashToken(s.a.token))]);
    expect(s.statements() - before).toBe(1);
    expect(l).toMatchObject({ id: leaf, allowance_micros: 10, depth: 3 });
    expect(l!.ancestors.map((x) => [x.id, Number(x.allowance_micros ?? -1), x.spending_controls, x.revoked_at])).toEqual([
      [grandchild, 20, null, null],
      [child, 30, daily, null],
      [s.a.id, -1, null, null],
    ]);
    expect(g!.ancestors.map((x) => x.id)).toEqual([child, s.a.id]);
    expect(a).toMatchObject({ id: s.a.id, ancestors: [] });
  });

  test("behavior: a revocation committed before the lookup is asked for is seen by it", async () => {
    const s = await setup();
    expect((await s.ledger.tokens.findByHash(hashToken(s.a.token)))?.revoked_at).toBeNull();
    await s.ledger.tokens.revoke(s.a.id);
    expect((await s.ledger.tokens.findByHash(hashToken(s.a.token)))?.revoked_at).toEqual(expect.any(String));
  });
});

describe("token lookups on postgres, as the service opens it", () => {
  test("structure: the lookup is a prepared statement of the connection, parsed once however often it runs; a revocation is still seen at once", async () => {
    const db = await createTestDb("postgres");
    cleanups.push(() => db.drop());
    const ledger = ledgerOn(db);
    const deps = { ledger, clock: systemClock, newId };
    const project = await ledger.projects.create({ name: "p", plan: "free" });
    const a = await createToken(deps, { projectId: project.id, permissions: ["read"], mode: "test" });
    // One at a time: the pool keeps reusing its one idle connection, where the statement was prepared.
    for (let i = 0; i < 5; i++) expect((await ledger.tokens.findByHash(hashToken(a.token)))?.id).toBe(a.id);
    const prepared = await sql<{ name: string }>`select name from pg_prepared_statements where name like 'aw_token_lookup_%'`.execute(db.db);
    expect(prepared.rows.map((r) => r.name)).toEqual(["aw_token_lookup_1"]);
    await ledger.tokens.revoke(a.id);
    expect((await ledger.tokens.findByHash(hashToken(a.token)))?.revoked_at).toEqual(expect.any(String));
  });
});

describe("balances and plain pages on postgres, as the service opens it", () => {
  test("structure: the balance and the plain page are prepared statements of the connection; a deposit made between two reads shows in both", async () => {
    const db = await createTestDb("postgres");
    cleanups.push(() => db.drop());
    const ledger = ledgerOn(db);
    const projectId = await depositFundedProject(ledger, 2_000_000);
    // One at a time: the pool keeps reusing its one idle connection, where the statements were prepared.
    for (let i = 0; i < 6; i++) {
      expect((await ledger.balances.get(projectId))?.available_micros).toBe(2_000_000);
      expect((await ledger.balances.listTransactions(projectId, 20, 0)).total).toBe(1);
    }
    const prepared = await sql<{ name: string }>`select name from pg_prepared_statements where name in ('aw_balance', 'aw_transaction_page') order by name`.execute(db.db);
    expect(prepared.rows.map((r) => r.name)).toEqual(["aw_balance", "aw_transaction_page"]);
    // A plan kept for the connection still reads each call's rows (a generic plan after five runs).
    const key = { chain: "base", txHash: "0xsecond", logIndex: 0 };
    await ledger.deposits.recordSeen({ ...key, projectId, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1, blockNumber: 2, blockHash: "0xh2" });
    await ledger.deposits.credit(key);
    expect((await ledger.balances.get(projectId))?.available_micros).toBe(2_000_001);
    const page = await ledger.balances.listTransactions(projectId, 1, 0);
    expect(page.total).toBe(2);
    expect(page.rows).toHaveLength(1);
    expect((await ledger.balances.listTransactions(projectId, 20, 1)).rows).toHaveLength(1);
  });
});
