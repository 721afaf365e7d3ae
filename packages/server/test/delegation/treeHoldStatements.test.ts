// Structure of a hold by a token deep in a tree, on real SQLite and PostgreSQL: it runs the statements of a flat
// token's hold, however many ancestors' windows it judges and moves. On SQLite: the debit, one count of every
// window (which answers the limited ones' counters), and the three inserts; on PostgreSQL: one call. Amounts and
// refusals are the property tests' (nestedBudgets.property.test.ts); this file counts statements only.
import SQLite from "better-sqlite3";
import { describe, expect, test } from "vitest";
import { createToken } from "../../src/services/tokens.ts";
import { interceptQueries, setAvailable, spendWindows } from "../../src/ledger/testing.ts";
import { useTestApp } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { paymentByToken } from "../support/holds.ts";

/** The statements of SQLite's group commit around every write, which a write's own count leaves out. */
const FRAME = /^(savepoint|release|begin|commit|rollback|pragma)\b/i;

/** Runs `f` and answers the SQL of every statement better-sqlite3 ran meanwhile in this process, however it was prepared. */
async function sqliteStatements(f: () => Promise<unknown>): Promise<string[]> {
  const probe = new SQLite(":memory:");
  const proto = Object.getPrototypeOf(probe.prepare("select 1")) as Record<string, (...args: unknown[]) => unknown>;
  probe.close();
  const seen: string[] = [];
  const originals = (["run", "all", "get", "iterate"] as const).map((m) => [m, proto[m]!] as const);
  for (const [m, original] of originals) {
    proto[m] = function (this: { source: string }, ...args: unknown[]) {
      seen.push(this.source);
      return original.apply(this, args);
    };
  }
  try {
    await f();
  } finally {
    for (const [m, original] of originals) proto[m] = original;
  }
  return seen.filter((s) => !FRAME.test(s.trim()));
}

describe.each(dialects)("a hold by a depth-3 token (%s)", (dialect) => {
  const { t, app } = useTestApp(dialect);

  /** The statements a hold of `usd` by `tokenId` runs. */
  async function statementsOf(tokenId: string, usd: number): Promise<string[]> {
    const payment = await paymentByToken(t.ctx, tokenId, usd);
    const hold = () => t.ctx.ledger.payments.hold(payment).then((r) => expect(r.kind).toBe("held"));
    if (dialect === "sqlite") return sqliteStatements(hold);
    const seen: string[] = [];
    const restore = interceptQueries(t.ctx.ledger, (q, send) => (seen.push(q.sql), send(q)));
    try {
      await hold();
    } finally {
      restore();
    }
    return seen;
  }

  test("structure: a leaf under three limited levels runs the statements of a flat token's hold; every level's counters move", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "p", plan: "free" });
    await setAvailable(t.ctx.ledger, project.id, 1_000_000_000);
    const flat = await createToken(t.ctx, { projectId: project.id, permissions: ["read", "pay"], mode: "test" });
    const root = await createToken(t.ctx, { projectId: project.id, permissions: ["read", "pay", "delegate"], mode: "test" });
    // As the pay bench's tree: each level below the root with a daily limit and an allowance.
    const path: { id: string; token: string }[] = [];
    let parent = root.token;
    for (let depth = 1; depth <= 3; depth++) {
      const res = await app.inject({ method: "POST", url: "/v1/tokens", headers: { authorization: `Bearer ${parent}` }, payload: { permissions: depth < 3 ? ["read", "pay", "delegate"] : ["read", "pay"], allowance_usd: 100 - depth, spending_controls: { spending_limits: [{ amount_usd: 100 - depth, interval: "daily" }] } } });
      expect(res.statusCode, res.body).toBe(201);
      path.push(res.json());
      parent = res.json().token;
    }
    const leaf = path[2]!.id;
    // The first holds write the windows' counters from the ledger (once a window); the next ones are counted here.
    await statementsOf(flat.id, 1);
    await statementsOf(leaf, 1);

    const flatStatements = await statementsOf(flat.id, 1);
    const leafStatements = await statementsOf(leaf, 1);
    if (dialect === "sqlite") {
      expect(flatStatements.map((s) => s.split(" ").slice(0, 3).join(" "))).toEqual(['update "balances" set', 'update "spend_windows" set', 'insert into "payments"', 'insert into "transactions"', 'insert into "journal_entries"']);
    } else {
      expect(flatStatements).toHaveLength(1);
      expect(flatStatements[0]).toContain("aw_hold_batch(");
    }
    expect(leafStatements).toHaveLength(flatStatements.length);
    // On SQLite one statement reads and moves the windows' counters (the payment's row only names them).
    if (dialect === "sqlite") expect(leafStatements.filter((s) => /(update|from|into) "spend_windows"/.test(s))).toHaveLength(1);

    // Each of the three levels' daily window and allowance took both of the leaf's payments.
    const counters = await spendWindows(t.ctx.ledger, path.map((p) => p.id));
    expect(counters.filter((c) => c.kind === "daily" || c.kind === "all_time").map((c) => Number(c.spent_micros))).toEqual([2_000_000, 2_000_000, 2_000_000, 2_000_000, 2_000_000, 2_000_000]);
  });
});
