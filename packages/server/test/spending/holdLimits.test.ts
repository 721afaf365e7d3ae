// Spending controls as the ledger's hold enforces them, on real SQLite and PostgreSQL: window counters
// moved in the hold's own write, given back when a payment fails or is reversed, rolled over by their
// key, and never passed under concurrency or by any mix of limits and amounts.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type HoldControls, type SpendingControls, windowStart } from "../../src/domain/spending.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { type HoldResult, type NewPayment } from "../../src/ledger/payments.ts";
import { verifyLedger } from "../../src/ledger/verify.ts";
import { newId } from "../../src/ids.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "../support/db.ts";
import { depositFundedProject, usdcPayment } from "../support/holds.ts";

const USD = 1_000_000;
const none: SpendingControls = { limits: [], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };
const limits = (l: SpendingControls["limits"]): SpendingControls => ({ ...none, limits: l });
const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

function controls(tokenId: string, token: SpendingControls | null, project: SpendingControls | null = null): HoldControls & { approvalTimeoutMs: number } {
  return { tokenId, token, project, recipientKey: `addr:${RECIPIENT.toLowerCase()}`, approvalTimeoutMs: 86_400_000 };
}

const hold = (ledger: Ledger, projectId: string, amount: number, c: NewPayment["controls"]): Promise<HoldResult> => ledger.payments.hold(usdcPayment(projectId, amount, 0, { feeMicros: 0, feeUnits: 0, controls: c }));

describe.each(dialects)("spending limits in the hold (%s)", (dialect) => {
  let db: TestDb;
  let ledger: Ledger;
  beforeAll(async () => {
    db = await createTestDb(dialect);
    ledger = ledgerOn(db);
  });
  afterAll(async () => db?.drop());

  test("behavior: 200 concurrent holds against a daily limit that covers 10 → exactly 10 held, 190 refused with the window in the detail", async () => {
    const projectId = await depositFundedProject(ledger, 1_000 * USD);
    const c = controls(newId("tok"), limits([{ interval: "daily", amountMicros: 10 * USD }]));
    const results = await Promise.all(Array.from({ length: 200 }, () => hold(ledger, projectId, USD, c)));
    expect(results.filter((r) => r.kind === "held")).toHaveLength(10);
    const refused = results.filter((r) => r.kind === "refused");
    expect(refused).toHaveLength(190);
    for (const r of refused) {
      expect(r.refusal.code).toBe("spending_limit_exceeded");
      expect(r.refusal.detail).toContain("daily limit is 10.000000 USD; spent 10.000000 USD");
      expect(r.refusal.detail).toContain("remaining 0.000000 USD");
    }
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(990 * USD);
    expect(await ledger.payments.windowSpending([{ scopeId: c.tokenId, kind: "daily", start: windowStart("daily", new Date()) }])).toEqual([10 * USD]);
    expect((await ledger.payments.listRefusals({ projectId, limit: 500 })).length).toBe(190);
    expect((await verifyLedger(db.db)).problems).toEqual([]);
  });

  test("behavior: a failed and a reversed payment give their amount back to the window they were counted in", async () => {
    const projectId = await depositFundedProject(ledger, 100 * USD);
    const c = controls(newId("tok"), limits([{ interval: "daily", amountMicros: 5 * USD }, { interval: "monthly", amountMicros: 6 * USD }]));
    const a = await hold(ledger, projectId, 2 * USD, c);
    const b = await hold(ledger, projectId, 3 * USD, c);
    expect([a.kind, b.kind]).toEqual(["held", "held"]);
    expect((await hold(ledger, projectId, 1, c)).kind).toBe("refused");
    await ledger.payments.resolve((a as { payment: { id: string } }).payment.id, "failed");
    const day = { scopeId: c.tokenId, kind: "daily", start: windowStart("daily", new Date()) };
    const month = { scopeId: c.tokenId, kind: "monthly", start: windowStart("monthly", new Date()) };
    expect(await ledger.payments.windowSpending([day, month])).toEqual([3 * USD, 3 * USD]);
    await ledger.payments.resolve((b as { payment: { id: string } }).payment.id, "completed");
    expect(await ledger.payments.reverse((b as { payment: { id: string } }).payment.id, "ach return")).toBe(true);
    expect(await ledger.payments.windowSpending([day, month])).toEqual([0, 0]);
    // Resolving or reversing again gives nothing back twice.
    await ledger.payments.resolve((a as { payment: { id: string } }).payment.id, "failed");
    expect(await ledger.payments.reverse((b as { payment: { id: string } }).payment.id, "again")).toBe(false);
    expect(await ledger.payments.windowSpending([day, month])).toEqual([0, 0]);
    expect((await hold(ledger, projectId, 5 * USD, c)).kind).toBe("held");
  });

  test("behavior: the project's limit binds every token of the project, and the stricter of the two wins", async () => {
    const projectId = await depositFundedProject(ledger, 100 * USD);
    const project = limits([{ interval: "daily", amountMicros: 3 * USD }]);
    const t1 = controls(newId("tok"), limits([{ interval: "daily", amountMicros: 10 * USD }]), project);
    const t2 = controls(newId("tok"), null, project);
    expect((await hold(ledger, projectId, 2 * USD, t1)).kind).toBe("held");
    const r = await hold(ledger, projectId, 2 * USD, t2);
    expect(r.kind === "refused" && r.refusal.detail).toContain("project's daily limit is 3.000000 USD; spent 2.000000 USD");
    expect((await hold(ledger, projectId, 1 * USD, t2)).kind).toBe("held");
  });

  test("behavior: a day's budget spent at 23:59 UTC is available again at 00:00 (injected clock)", async () => {
    let now = new Date("2026-03-09T23:59:00.000Z");
    const clocked = ledgerOn(db, () => now);
    const projectId = await depositFundedProject(clocked, 100 * USD);
    const c = controls(newId("tok"), limits([{ interval: "daily", amountMicros: 6 * USD }, { interval: "weekly", amountMicros: 10 * USD }]));
    expect((await hold(clocked, projectId, 6 * USD, c)).kind).toBe("held");
    const refused = await hold(clocked, projectId, 1, c);
    expect(refused.kind === "refused" && refused.refusal.detail).toContain("2026-03-09T00:00:00.000Z – 2026-03-10T00:00:00.000Z");
    now = new Date("2026-03-10T00:00:00.000Z");
    expect((await hold(clocked, projectId, 3 * USD, c)).kind).toBe("held");
    // The week (from Monday 9 March) counts both days: 9 of 10 spent, while the new day has 3 left.
    const week = await hold(clocked, projectId, 2 * USD, c);
    expect(week.kind === "refused" && week.refusal.detail).toContain("weekly limit is 10.000000 USD; spent 9.000000 USD");
  });

  test("behavior: rails, allow-list, block-list and per_payment refuse without touching the balance", async () => {
    const projectId = await depositFundedProject(ledger, 100 * USD);
    const base = controls(newId("tok"), null);
    const cases: [SpendingControls, string][] = [
      [{ ...none, allowedRails: ["x402"] }, "rail_not_allowed"],
      [{ ...none, allowedRecipients: ["addr:0x0000000000000000000000000000000000000001"] }, "recipient_not_allowed"],
      [{ ...none, allowedRecipients: [base.recipientKey], blockedRecipients: [base.recipientKey] }, "recipient_not_allowed"],
      [limits([{ interval: "per_payment", amountMicros: USD }]), "spending_limit_exceeded"],
    ];
    for (const [token, code] of cases) {
      const r = await hold(ledger, projectId, 2 * USD, { ...base, token });
      expect(r.kind === "refused" && r.refusal.code).toBe(code);
    }
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(100 * USD);
    expect((await hold(ledger, projectId, 2 * USD, { ...base, token: { ...none, allowedRecipients: [base.recipientKey], allowedRails: ["usdc_transfer"] } })).kind).toBe("held");
  });

  test("property: random per_payment, daily and monthly limits and amounts — never above any limit, never refusing one that fits (300 runs)", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.record({ perPayment: fc.option(fc.integer({ min: 1, max: 60 }), { nil: null }), daily: fc.option(fc.integer({ min: 1, max: 100 }), { nil: null }), monthly: fc.option(fc.integer({ min: 1, max: 150 }), { nil: null }), projectDaily: fc.option(fc.integer({ min: 1, max: 120 }), { nil: null }) }),
        fc.array(fc.record({ amount: fc.integer({ min: 1, max: 70 }), fail: fc.boolean() }), { minLength: 1, maxLength: 8 }),
        async (l, ops) => {
          run++;
          const projectId = await depositFundedProject(ledger, 1_000 * USD);
          const tokenLimits: SpendingControls["limits"] = [];
          if (l.perPayment !== null) tokenLimits.push({ interval: "per_payment", amountMicros: l.perPayment * USD });
          if (l.daily !== null) tokenLimits.push({ interval: "daily", amountMicros: l.daily * USD });
          if (l.monthly !== null) tokenLimits.push({ interval: "monthly", amountMicros: l.monthly * USD });
          const c = controls(`tok_prop_${run}`, limits(tokenLimits), l.projectDaily === null ? null : limits([{ interval: "daily", amountMicros: l.projectDaily * USD }]));
          let counted = 0; // the model: amounts held and not failed
          for (const op of ops) {
            const amount = op.amount * USD;
            const fits =
              (l.perPayment === null || amount <= l.perPayment * USD) &&
              (l.daily === null || counted + amount <= l.daily * USD) &&
              (l.monthly === null || counted + amount <= l.monthly * USD) &&
              (l.projectDaily === null || counted + amount <= l.projectDaily * USD);
            const r = await hold(ledger, projectId, amount, c);
            expect(r.kind).toBe(fits ? "held" : "refused");
            if (r.kind !== "held") continue;
            if (op.fail) await ledger.payments.resolve(r.payment.id, "failed");
            else counted += amount;
          }
          const day = windowStart("daily", new Date());
          const [daily, monthly, projectDaily] = await ledger.payments.windowSpending([
            { scopeId: c.tokenId, kind: "daily", start: day },
            { scopeId: c.tokenId, kind: "monthly", start: windowStart("monthly", new Date()) },
            { scopeId: projectId, kind: "daily", start: day },
          ]);
          if (l.daily !== null) expect(daily).toBe(counted);
          if (l.monthly !== null) expect(monthly).toBe(counted);
          if (l.projectDaily !== null) expect(projectDaily).toBe(counted);
        },
      ),
      // Each run is a project and up to eight durable holds: 300 runs keep the file under half a minute a dialect.
      { numRuns: 300 },
    );
  }, 900_000);
});
