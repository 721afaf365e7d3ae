// Nested budgets as a property of the ledger's hold: over random token trees (depth ≤ 3), daily limits,
// allowances, payments and failures, a hold is accepted exactly when the payment fits the paying token's
// and every ancestor's limit and allowance (a model of the tree says so): no node ever passes a limit,
// and no payment that fits every ancestor is refused. A failed payment gives its amount back to every
// ancestor's windows (the release trigger). 1,000 runs on SQLite, fewer on PostgreSQL. Then the same with the payments
// between two failures asked together, so that PostgreSQL judges them in one call of aw_hold_batch, some of them with
// controls read before their token's limit was set (judged without it, counted all the same): each is held exactly when
// it fits the limits it was judged by, in the order asked, and every counter row equals its window's sum.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AncestorControls, HoldControls, SpendingControls } from "../../src/domain/spending.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { verifyLedger } from "../../src/ledger/verify.ts";
import { newId } from "../../src/ids.ts";
import { dbOf } from "../../src/ledger/connection.ts";
import { createTestLedger, type TestLedger } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";

const CENT = 10_000;
type NodeSpec = { parent: number; daily: number | null; allowance: number | null };
type Op = { kind: "pay"; node: number; amount: number; stale?: boolean } | { kind: "fail"; pick: number };

/** Node 0 is the root; node i > 0 hangs under an earlier node whose depth is below 3. */
const treeArb = fc.array(
  fc.record({
    parent: fc.nat(),
    daily: fc.option(fc.integer({ min: 1, max: 30 }).map((n) => n * 10 * CENT), { nil: null }),
    allowance: fc.option(fc.integer({ min: 1, max: 30 }).map((n) => n * 10 * CENT), { nil: null }),
  }),
  { minLength: 1, maxLength: 7 },
);
const opsArb = fc.array(
  fc.oneof(
    { weight: 5, arbitrary: fc.record({ kind: fc.constant("pay" as const), node: fc.nat(), amount: fc.integer({ min: 1, max: 12 }).map((n) => n * 10 * CENT), stale: fc.boolean() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("fail" as const), pick: fc.nat() }) },
  ),
  { minLength: 1, maxLength: 25 },
);

const controlsOf = (daily: number | null): SpendingControls | null =>
  daily === null ? null : { limits: [{ interval: "daily", amountMicros: daily }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };

/**
 * `together`: the payments between two failures are asked at once, and a payment marked stale is judged with controls
 * read before its own token's limit and allowance were set (none of its own; its ancestors' as they are).
 */
async function property(ledger: Ledger, specs: NodeSpec[], ops: Op[], together = false): Promise<void> {
  const dayAtStart = new Date().toISOString().slice(0, 10);
  const project = await ledger.projects.create({ name: "p", plan: "free" });
  // Funded by a confirmed deposit, so the journal verifies.
  const key = { chain: "base", txHash: `0x${project.id}`, logIndex: 0 };
  await ledger.deposits.recordSeen({ ...key, projectId: project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1_000_000_000, blockNumber: 1, blockHash: "0xh" });
  await ledger.deposits.credit(key);
  // The tree: parents fixed to earlier nodes of depth < 3.
  const nodes: { id: string; parent: number | null; depth: number; spec: NodeSpec }[] = [];
  for (const [i, spec] of specs.entries()) {
    const candidates = nodes.map((n, k) => k).filter((k) => nodes[k]!.depth < 3);
    const parent = i === 0 ? null : candidates[spec.parent % candidates.length]!;
    const id = newId("tok");
    const row = { id, project_id: project.id, token_hash: id, display_prefix: "aw_test_x", permissions: "pay,delegate", created_at: new Date().toISOString(), expires_at: null, revoked_at: null };
    const settled = { spending_controls: spec.daily === null ? null : JSON.stringify(controlsOf(spec.daily)), expires_at: null, allowance_micros: spec.allowance };
    if (parent === null) await ledger.tokens.insert({ ...row, ...settled });
    else await ledger.tokens.insertChild(nodes[parent]!.id, row, { id: nodes[parent]!.id, name: "parent", role: null, ip: null }, () => settled);
    nodes.push({ id, parent, depth: parent === null ? 0 : nodes[parent]!.depth + 1, spec });
  }
  const path = (i: number): number[] => (i < 0 ? [] : [i, ...(nodes[i]!.parent === null ? [] : path(nodes[i]!.parent!))]);
  const spent = nodes.map(() => 0);
  const held: { id: string; node: number; amount: number }[] = [];
  /** The payments asked together, judged in this order. */
  let round: Extract<Op, { kind: "pay" }>[] = [];
  const payRound = async () => {
    const asked = round.map((op) => {
      const node = op.node % nodes.length;
      const chain = path(node);
      const stale = together && op.stale === true;
      const ancestors: AncestorControls[] = chain.slice(1).map((k) => ({ tokenId: nodes[k]!.id, name: null, controls: controlsOf(nodes[k]!.spec.daily), allowanceMicros: nodes[k]!.spec.allowance }));
      const controls: HoldControls & { approvalTimeoutMs: number } = {
        tokenId: nodes[node]!.id,
        token: stale ? null : controlsOf(nodes[node]!.spec.daily),
        project: null,
        allowanceMicros: stale ? null : nodes[node]!.spec.allowance,
        ancestors,
        recipientKey: "addr:0x90f79bf6eb2c4f870365e785982e1f101e93b906",
        approvalTimeoutMs: 60_000,
      };
      return { op, node, chain, stale, held: ledger.payments.hold(usdcPayment(project.id, op.amount, 0, { feeMicros: 0, feeUnits: 0, controls, tokenId: nodes[node]!.id })) };
    });
    round = [];
    const outcomes = await Promise.all(asked.map((a) => a.held));
    for (const [i, { op, node, chain, stale }] of asked.entries()) {
      const r = outcomes[i]!;
      const fits = chain.every((k, level) => {
        const s = nodes[k]!.spec;
        if (level === 0 && stale) return true;
        return (s.daily === null || spent[k]! + op.amount <= s.daily) && (s.allowance === null || spent[k]! + op.amount <= s.allowance);
      });
      expect(r.kind, `payment of ${op.amount} by node ${node}${stale ? " (stale)" : ""} (path ${chain}) with spent ${chain.map((k) => spent[k])}`).toBe(fits ? "held" : "refused");
      if (r.kind === "held") {
        for (const k of chain) spent[k]! += op.amount;
        held.push({ id: r.payment.id, node, amount: op.amount });
      }
    }
  };
  for (const op of ops) {
    if (op.kind === "pay") {
      round.push(op);
      if (!together) await payRound();
      continue;
    }
    await payRound();
    if (held.length === 0) continue;
    const [h] = held.splice(op.pick % held.length, 1);
    await ledger.payments.resolve(h!.id, "failed", { failureReason: "test" });
    for (const k of path(h!.node)) spent[k]! -= h!.amount;
  }
  await payRound();
  // Each node's window, as the counters or the ledger's sum show it, is what the model spent.
  const windows = await ledger.payments.windowSpending(nodes.map((n) => ({ scope: "token" as const, scopeId: n.id, kind: "all_time", start: "all", projectId: project.id })));
  expect(windows).toEqual(spent);
  // And every counter row written equals its window's sum. A daily row holds every payment of the run only if the run
  // stayed within one UTC day; one that crossed midnight checks its all-time rows alone.
  const oneDay = new Date().toISOString().slice(0, 10) === dayAtStart;
  const rows = await dbOf(ledger).selectFrom("spend_windows").selectAll().where("scope_id", "in", nodes.map((n) => n.id)).execute();
  for (const r of rows.filter((r) => r.kind === "all_time" || oneDay)) expect(Number(r.spent_micros), `${r.kind} counter of node ${nodes.findIndex((n) => n.id === r.scope_id)}`).toBe(spent[nodes.findIndex((n) => n.id === r.scope_id)]);
}

describe("nested budgets: a property over random trees", () => {
  let sqlite: TestLedger;
  let pg: TestLedger;
  beforeAll(async () => {
    sqlite = await createTestLedger("sqlite", { sqliteFile: ":memory:" });
    pg = await createTestLedger("postgres");
  });
  afterAll(async () => {
    await sqlite?.drop();
    await pg?.drop();
  });

  test("behavior: SQLite, 1,000 runs: held exactly when the payment fits every node of its path; counters equal the model", { timeout: 600_000 }, async () => {
    await fc.assert(fc.asyncProperty(treeArb, opsArb, (specs, ops) => property(sqlite.ledger, specs, ops)), { numRuns: 1_000 });
    expect((await verifyLedger(sqlite.db)).problems).toEqual([]);
  });

  test("behavior: PostgreSQL (aw_hold_batch), 100 runs: the same", { timeout: 600_000 }, async () => {
    await fc.assert(fc.asyncProperty(treeArb, opsArb, (specs, ops) => property(pg.ledger, specs, ops)), { numRuns: 100 });
    expect((await verifyLedger(pg.db)).problems).toEqual([]);
  });

  test.each(["sqlite", "postgres"] as const)("behavior: payments asked together, some judged by controls read before their limit (%s), 100 runs: the same", { timeout: 600_000 }, async (dialect) => {
    const t = dialect === "sqlite" ? sqlite : pg;
    await fc.assert(fc.asyncProperty(treeArb, opsArb, (specs, ops) => property(t.ledger, specs, ops, true)), { numRuns: 100 });
    expect((await verifyLedger(t.db)).problems).toEqual([]);
  });
});
