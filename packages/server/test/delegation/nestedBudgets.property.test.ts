// Nested budgets as a property of the ledger's hold: over random token trees (depth ≤ 3), daily limits,
// allowances, payments and failures, a hold is accepted exactly when the payment fits the paying token's
// and every ancestor's limit and allowance (a model of the tree says so): no node ever passes a limit,
// and no payment that fits every ancestor is refused. A failed payment gives its amount back to every
// ancestor's windows (the release trigger). 1,000 runs on SQLite, fewer on PostgreSQL.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { AncestorControls, HoldControls, SpendingControls } from "../../src/domain/spending.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { verifyLedger } from "../../src/ledger/verify.ts";
import { newId } from "../../src/ids.ts";
import { createTestLedger, type TestLedger } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";

const CENT = 10_000;
type NodeSpec = { parent: number; daily: number | null; allowance: number | null };
type Op = { kind: "pay"; node: number; amount: number } | { kind: "fail"; pick: number };

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
    { weight: 5, arbitrary: fc.record({ kind: fc.constant("pay" as const), node: fc.nat(), amount: fc.integer({ min: 1, max: 12 }).map((n) => n * 10 * CENT) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("fail" as const), pick: fc.nat() }) },
  ),
  { minLength: 1, maxLength: 25 },
);

const controlsOf = (daily: number | null): SpendingControls | null =>
  daily === null ? null : { limits: [{ interval: "daily", amountMicros: daily }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };

async function property(ledger: Ledger, specs: NodeSpec[], ops: Op[]): Promise<void> {
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
  for (const op of ops) {
    if (op.kind === "fail") {
      if (held.length === 0) continue;
      const [h] = held.splice(op.pick % held.length, 1);
      await ledger.payments.resolve(h!.id, "failed", { failureReason: "test" });
      for (const k of path(h!.node)) spent[k]! -= h!.amount;
      continue;
    }
    const node = op.node % nodes.length;
    const chain = path(node);
    const fits = chain.every((k) => {
      const s = nodes[k]!.spec;
      return (s.daily === null || spent[k]! + op.amount <= s.daily) && (s.allowance === null || spent[k]! + op.amount <= s.allowance);
    });
    const ancestors: AncestorControls[] = chain.slice(1).map((k) => ({ tokenId: nodes[k]!.id, name: null, controls: controlsOf(nodes[k]!.spec.daily), allowanceMicros: nodes[k]!.spec.allowance }));
    const controls: HoldControls & { approvalTimeoutMs: number } = {
      tokenId: nodes[node]!.id,
      token: controlsOf(nodes[node]!.spec.daily),
      project: null,
      allowanceMicros: nodes[node]!.spec.allowance,
      ancestors,
      recipientKey: "addr:0x90f79bf6eb2c4f870365e785982e1f101e93b906",
      approvalTimeoutMs: 60_000,
    };
    const r = await ledger.payments.hold(usdcPayment(project.id, op.amount, 0, { feeMicros: 0, feeUnits: 0, controls, tokenId: nodes[node]!.id }));
    expect(r.kind, `payment of ${op.amount} by node ${node} (path ${chain}) with spent ${chain.map((k) => spent[k])}`).toBe(fits ? "held" : "refused");
    if (r.kind === "held") {
      for (const k of chain) spent[k]! += op.amount;
      held.push({ id: r.payment.id, node, amount: op.amount });
    }
  }
  // Each node's window, as the counters or the ledger's sum show it, is what the model spent.
  const windows = await ledger.payments.windowSpending(nodes.map((n) => ({ scope: "token" as const, scopeId: n.id, kind: "all_time", start: "all", projectId: project.id })));
  expect(windows).toEqual(spent);
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
});
