// A limit refusal keeps what the limit measured, on real SQLite and PostgreSQL: the rule (each window, the
// all-time limit, an allowance, per_payment), whose rule it is (the paying token, an ancestor of it, the
// project), the limit, what was spent, what remained and the amount asked, in micro-USDC, beside its detail
// (migration 0033). The console's sentence is worded from those numbers; a refusal recorded before them
// reads as its detail.
import { refusalSentence } from "../../../console/src/outcomes.ts";
import { describe, expect, test } from "vitest";
import { migrateToLatest } from "../../src/ledger/migrations.ts";
import { listRefusals } from "../../src/services/console/approvals.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { createToken } from "../../src/services/tokens.ts";
import { useTestApp } from "../support/context.ts";
import { createTestDb, dialects, ledgerOn } from "../support/db.ts";
import { fundedProject, holdByToken } from "../support/holds.ts";

const USD = 1_000_000;
type Limit = { amount_usd: number; interval: string };

describe.each(dialects)("what a limit refusal measured (%s)", (dialect) => {
  const made = useTestApp(dialect);

  /** A project's token (no limits of its own) that makes children by POST /v1/tokens. */
  async function projectRoot() {
    const projectId = await fundedProject(made.t.ctx);
    const root = await createToken(made.t.ctx, { projectId, permissions: ["read", "pay", "delegate"], mode: "test", name: "root" });
    return { projectId, root };
  }
  async function child(parentSecret: string, body: { name: string; spending_limits?: Limit[]; allowance_usd?: number; delegate?: boolean }) {
    const payload = {
      name: body.name,
      permissions: body.delegate ? ["read", "pay", "delegate"] : ["read", "pay"],
      ...(body.allowance_usd !== undefined ? { allowance_usd: body.allowance_usd } : {}),
      ...(body.spending_limits ? { spending_controls: { spending_limits: body.spending_limits } } : {}),
    };
    const res = await made.app.inject({ method: "POST", url: "/v1/tokens", headers: { authorization: `Bearer ${parentSecret}`, "content-type": "application/json" }, payload });
    expect(res.statusCode, res.body).toBe(201);
    return res.json() as { id: string; token: string };
  }
  const pay = async (tokenId: string, usd: number) => (await holdByToken(made.t.ctx, tokenId, usd)).kind;
  /** The stored refusals of a project, oldest first, as their columns read. */
  async function stored(projectId: string) {
    const rows = (await made.t.ctx.ledger.payments.listRefusals({ projectId, limit: 100 })).reverse();
    const n = (v: number | string | null) => (v === null ? null : Number(v));
    return rows.map((r) => ({ token_id: r.token_id, rule: r.rule, rule_level: r.rule_level, rule_owner_id: r.rule_owner_id, limit_micros: n(r.limit_micros), spent_micros: n(r.spent_micros), remaining_micros: n(r.remaining_micros), amount_micros: n(r.amount_micros) }));
  }
  /** The console's sentences for the project's refusals, oldest first. */
  const sentences = async (projectId: string) => (await listRefusals(made.t.ctx, projectId, null, 100)).reverse().map(refusalSentence);

  test("behavior: a daily, weekly, monthly and all-time window of the paying token each record their limit, spent, remaining and the amount", async () => {
    const { projectId, root } = await projectRoot();
    const rules = [["daily", 2, 1.5, 1], ["weekly", 3, 2.5, 1], ["monthly", 4, 3, 2], ["all_time", 5, 4.25, 1]] as const;
    const tokens: string[] = [];
    for (const [interval, limit, first, second] of rules) {
      const tok = await child(root.token, { name: interval, spending_limits: [{ amount_usd: limit, interval }] });
      tokens.push(tok.id);
      expect([await pay(tok.id, first), await pay(tok.id, second)]).toEqual(["held", "refused"]);
    }
    expect(await stored(projectId)).toEqual(
      rules.map(([rule, limit, first, second], i) => ({
        token_id: tokens[i],
        rule,
        rule_level: "token",
        rule_owner_id: tokens[i],
        limit_micros: limit * USD,
        spent_micros: first * USD,
        remaining_micros: (limit - first) * USD,
        amount_micros: second * USD,
      })),
    );
    expect(await sentences(projectId)).toEqual([
      "Refused: this payment of $1.00 is above the agent's daily limit of $2.00 ($1.50 spent today, $0.50 left).",
      "Refused: this payment of $1.00 is above the agent's weekly limit of $3.00 ($2.50 spent this week, $0.50 left).",
      "Refused: this payment of $2.00 is above the agent's monthly limit of $4.00 ($3.00 spent this month, $1.00 left).",
      "Refused: this payment of $1.00 is above the agent's all-time limit of $5.00 ($4.25 spent in all, $0.75 left).",
    ]);
  });

  test("behavior: an allowance, a per_payment limit and a payment above a whole window record what they measured; nothing unread is recorded as spent", async () => {
    const { projectId, root } = await projectRoot();
    const allowance = await child(root.token, { name: "allowance", allowance_usd: 3 });
    expect([await pay(allowance.id, 2), await pay(allowance.id, 1.5)]).toEqual(["held", "refused"]);
    const each = await child(root.token, { name: "each", spending_limits: [{ amount_usd: 1, interval: "per_payment" }] });
    expect(await pay(each.id, 1.25)).toBe("refused");
    const daily = await child(root.token, { name: "daily", spending_limits: [{ amount_usd: 2, interval: "daily" }] });
    expect([await pay(daily.id, 0.5), await pay(daily.id, 3)]).toEqual(["held", "refused"]);
    expect(await stored(projectId)).toEqual([
      { token_id: allowance.id, rule: "allowance", rule_level: "token", rule_owner_id: allowance.id, limit_micros: 3 * USD, spent_micros: 2 * USD, remaining_micros: 1 * USD, amount_micros: 1.5 * USD },
      { token_id: each.id, rule: "per_payment", rule_level: "token", rule_owner_id: each.id, limit_micros: 1 * USD, spent_micros: null, remaining_micros: null, amount_micros: 1.25 * USD },
      // Above the whole limit: the window's counter is not read, so neither spent nor remaining is claimed.
      { token_id: daily.id, rule: "daily", rule_level: "token", rule_owner_id: daily.id, limit_micros: 2 * USD, spent_micros: null, remaining_micros: null, amount_micros: 3 * USD },
    ]);
    expect(await sentences(projectId)).toEqual([
      "Refused: this payment of $1.50 is above what is left of the agent's allowance of $3.00 ($2.00 spent, $1.00 left).",
      "Refused: this payment of $1.25 is above the agent's per-payment limit of $1.00.",
      "Refused: this payment of $3.00 is larger than the whole of the agent's daily limit of $2.00.",
    ]);
    const [, , whole] = await made.t.ctx.ledger.payments.listRefusals({ projectId, limit: 3 }).then((r) => r.reverse());
    expect(whole!.detail).toBe("Spending limit exceeded: the token's daily limit is 2.000000 USD and this payment is 3.000000 USD, more than the whole limit. Pay at most what remains of it (GET /v1/limits shows it), or ask an operator to raise the limit.");
  });

  test("behavior: a child's payment refused by its ancestor's window names that ancestor; the project's window names the project", async () => {
    const { projectId, root } = await projectRoot();
    const planner = await child(root.token, { name: "planner", delegate: true, spending_limits: [{ amount_usd: 10, interval: "daily" }] });
    const fetcher = await child(planner.token, { name: "fetcher" });
    expect([await pay(planner.id, 9.5), await pay(fetcher.id, 1)]).toEqual(["held", "refused"]);
    await made.t.ctx.ledger.tokens.setSpendingControls("project", projectId, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 12, interval: "weekly" }] }, new Uint8Array(32))));
    expect(await pay(root.id, 3)).toBe("refused");
    expect(await stored(projectId)).toEqual([
      { token_id: fetcher.id, rule: "daily", rule_level: "ancestor", rule_owner_id: planner.id, limit_micros: 10 * USD, spent_micros: 9.5 * USD, remaining_micros: 0.5 * USD, amount_micros: 1 * USD },
      { token_id: root.id, rule: "weekly", rule_level: "project", rule_owner_id: projectId, limit_micros: 12 * USD, spent_micros: 9.5 * USD, remaining_micros: 2.5 * USD, amount_micros: 3 * USD },
    ]);
    expect(await sentences(projectId)).toEqual([
      "Refused: this payment of $1.00 is above the daily limit of $10.00 set on planner, an agent above this one ($9.50 spent today, $0.50 left).",
      "Refused: this payment of $3.00 is above the project's weekly limit of $12.00 ($9.50 spent this week, $2.50 left).",
    ]);
    // The console's item carries the ancestor by name and prefix, as the service read the project's tokens.
    const [item] = await listRefusals(made.t.ctx, projectId, fetcher.id, 10);
    expect(item!.limit).toEqual({ rule: "daily", level: "ancestor", owner: { id: planner.id, name: "planner", prefix: expect.stringMatching(/^aw_test_/) }, limit_micros: 10 * USD, spent_micros: 9.5 * USD, remaining_micros: 0.5 * USD });
  });

  test("behavior: a token's refusals are its own and those of every token below it, never a sibling branch's or an ancestor's", async () => {
    const { projectId, root } = await projectRoot();
    const planner = await child(root.token, { name: "planner", delegate: true, spending_limits: [{ amount_usd: 1, interval: "daily" }] });
    const fetcher = await child(planner.token, { name: "fetcher", spending_limits: [{ amount_usd: 0.5, interval: "daily" }] });
    const other = await child(root.token, { name: "other", spending_limits: [{ amount_usd: 0.5, interval: "daily" }] });
    expect([await pay(fetcher.id, 0.75), await pay(planner.id, 2), await pay(other.id, 0.75)]).toEqual(["refused", "refused", "refused"]);
    const of = async (tokenId: string) => (await listRefusals(made.t.ctx, projectId, tokenId, 10)).map((r) => [r.token_id, r.token_name]);
    expect(await of(planner.id)).toEqual([[planner.id, "planner"], [fetcher.id, "fetcher"]]);
    expect(await of(fetcher.id)).toEqual([[fetcher.id, "fetcher"]]);
    expect(await of(other.id)).toEqual([[other.id, "other"]]);
    expect(await of(root.id)).toHaveLength(3);
  });

  test("default: a refusal of another code records no measures, and its sentence is the code's own", async () => {
    const { projectId, root } = await projectRoot();
    await made.t.ctx.ledger.tokens.setSpendingControls("token", root.id, controlsColumn(parseControlsInput({ allowed_rails: ["x402"] }, new Uint8Array(32))));
    expect(await pay(root.id, 1)).toBe("refused");
    expect(await stored(projectId)).toEqual([{ token_id: root.id, rule: null, rule_level: null, rule_owner_id: null, limit_micros: null, spent_micros: null, remaining_micros: null, amount_micros: 1 * USD }]);
    expect(await sentences(projectId)).toEqual(["Refused: this payment of $1.00 uses a rail the spending controls do not allow."]);
  });
});

describe.each(dialects)("migration 0033 on a %s database with refusals", (dialect) => {
  test("a refusal recorded before keeps null measures, and the console reads it as its detail", async () => {
    const db = await createTestDb(dialect, { migrateTo: "0032_spend_days" });
    try {
      const detail = "Spending limit exceeded: the token's daily limit is 2.000000 USD; spent 1.500000 USD in the window 2026-01-01T00:00:00.000Z – 2026-01-02T00:00:00.000Z (UTC), remaining 0.500000 USD, and this payment is 1.000000 USD. Pay at most the remaining amount, wait for the next window, or ask an operator to raise the limit (GET /v1/limits shows them).";
      await (db.db as any).insertInto("spending_refusals").values({ project_id: "prj_old", token_id: null, code: "spending_limit_exceeded", detail, rail: "usdc_transfer", recipient: "0xabc", amount_micros: USD, created_at: "2026-01-01T12:00:00.000Z" }).execute();
      expect((await migrateToLatest(db.db, db.dialect))[0]).toBe("0033_refusal_limits");
      const row = await db.db.selectFrom("spending_refusals").selectAll().executeTakeFirstOrThrow();
      expect([row.rule, row.rule_level, row.rule_owner_id, row.limit_micros, row.spent_micros, row.remaining_micros]).toEqual([null, null, null, null, null, null]);
      const [item] = await listRefusals({ ledger: ledgerOn(db) }, "prj_old", null, 10);
      expect(item!.limit).toBeNull();
      expect(refusalSentence(item!)).toBe(`Refused: ${detail}`);
    } finally {
      await db.drop();
    }
  });
});
