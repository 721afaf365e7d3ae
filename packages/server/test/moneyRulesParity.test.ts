// The money rules exist twice: in TypeScript (ledger/store.ts, what SQLite runs) and in PL/pgSQL
// (ledger/pgFunctions.ts: the hold, resolve and spending functions PostgreSQL runs in one call). This
// drives the same random operations through both on real databases and requires the same answers and
// the same resulting ledger: balances, transactions, payments, journal totals per account and window
// counters. A fix made to one side and forgotten on the other fails here.
import fc from "fast-check";
import { afterAll, beforeAll, expect, test } from "vitest";
import type { HoldControls, SpendingControls } from "../src/domain/spending.ts";
import type { Ledger } from "../src/ledger/store.ts";
import { type HoldResult } from "../src/ledger/payments.ts";
import { newId } from "../src/ids.ts";
import { createTestDb, ledgerOn, type TestDb } from "./support/db.ts";
import { usdcPayment } from "./support/holds.ts";
import { balanceRows, journalTotals, paymentRows, spendWindows, transactionRows } from "../src/ledger/testing.ts";

const USD = 1_000_000;
const RECIPIENTS = ["0x90F79bf6EB2c4f870365E785982E1f101E93b906", "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65"];

type Controls = { perPayment: number | null; daily: number | null; allowFirstOnly: boolean; approvalAbove: number | null };
type Op =
  | { kind: "deposit"; project: number; amount: number }
  | { kind: "pay"; project: number; token: number; amount: number; fee: number; key: number | null; to: number }
  | { kind: "resolve"; pick: number; outcome: "completed" | "failed" }
  | { kind: "reverse"; pick: number };

// Mostly lenient, so that sequences go on long enough to fill windows rather than stop at the first refusal.
const controlsArb: fc.Arbitrary<Controls> = fc.record({
  perPayment: fc.option(fc.integer({ min: 4, max: 8 }).map((n) => n * USD), { nil: null }),
  daily: fc.option(fc.integer({ min: 2, max: 20 }).map((n) => n * USD), { nil: null, freq: 4 }),
  allowFirstOnly: fc.constantFrom(false, false, false, true),
  approvalAbove: fc.option(fc.integer({ min: 5, max: 8 }).map((n) => n * USD), { nil: null, freq: 2 }),
});
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("deposit" as const), project: fc.nat(1), amount: fc.integer({ min: 1, max: 30 }).map((n) => n * USD) }) },
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant("pay" as const),
      project: fc.nat(1),
      token: fc.nat(1),
      // Coarse amounts, so a window is often filled to exactly its limit (the boundary a rule gets wrong).
      amount: fc.integer({ min: 1, max: 16 }).map((n) => n * 500_000),
      fee: fc.integer({ min: 0, max: 30 }).map((n) => n * 10_000),
      key: fc.option(fc.nat(4), { nil: null }),
      to: fc.nat(1),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("resolve" as const), pick: fc.nat(), outcome: fc.constantFrom("completed" as const, "failed" as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("reverse" as const), pick: fc.nat() }) },
);

function spendingControls(c: Controls): SpendingControls {
  return {
    limits: [
      ...(c.perPayment === null ? [] : [{ interval: "per_payment" as const, amountMicros: c.perPayment }]),
      ...(c.daily === null ? [] : [{ interval: "daily" as const, amountMicros: c.daily }]),
    ],
    allowedRecipients: c.allowFirstOnly ? [`addr:${RECIPIENTS[0]!.toLowerCase()}`] : null,
    blockedRecipients: [],
    allowedRails: null,
    approvalAboveMicros: c.approvalAbove,
  };
}

/** What one side answered and holds at the end, with its own ids replaced by their order of appearance. */
type Outcome = { answers: unknown[]; state: unknown };

async function play(ledger: Ledger, run: string, ops: Op[], tokenControls: Controls[], projectControls: Controls | null): Promise<Outcome> {
  const projects: string[] = [];
  for (let i = 0; i < 2; i++) projects.push((await ledger.projects.create({ name: `${run}-${i}`, plan: "free" })).id);
  const tokens = tokenControls.map(() => newId("tok"));
  const payments: string[] = [];
  const answers: unknown[] = [];
  let n = 0;
  for (const op of ops) {
    n++;
    if (op.kind === "deposit") {
      const key = { chain: "base", txHash: `0x${run}-${n}`, logIndex: 0 };
      await ledger.deposits.recordSeen({ ...key, projectId: projects[op.project]!, toAddress: "0x0", fromAddress: "0x1", amountMicros: op.amount, blockNumber: n, blockHash: "0xh" });
      answers.push(await ledger.deposits.credit(key));
    } else if (op.kind === "pay") {
      const to = RECIPIENTS[op.to]!;
      const controls: HoldControls & { approvalTimeoutMs: number } = {
        tokenId: tokens[op.token]!,
        token: spendingControls(tokenControls[op.token]!),
        project: projectControls && spendingControls(projectControls),
        recipientKey: `addr:${to.toLowerCase()}`,
        approvalTimeoutMs: 86_400_000,
      };
      const r: HoldResult = await ledger.payments.hold(
        usdcPayment(projects[op.project]!, op.amount, op.fee, { recipient: to, idempotencyKey: op.key === null ? null : `k${op.key}`, controls }),
      );
      if (r.kind === "held") payments.push(r.payment.id);
      answers.push(r.kind === "held" ? { kind: r.kind, status: r.payment.status, approval: r.payment.approval } : r.kind === "refused" ? { kind: r.kind, refusal: r.refusal } : { kind: r.kind });
    } else if (payments.length) {
      const id = payments[op.pick % payments.length]!;
      if (op.kind === "resolve") {
        const r = await ledger.payments.resolve(id, op.outcome);
        answers.push({ changed: r.changed, status: r.payment.status });
      } else {
        answers.push(await ledger.payments.reverse(id, "test"));
      }
    }
  }
  // A refusal names the project or token whose rule refused it: by its place, as the state does.
  return { answers: JSON.parse(renamer(projects, tokens)(JSON.stringify(answers))) as unknown[], state: await snapshot(ledger, projects, tokens) };
}

/** Replaces the ids of one side's projects and tokens with their places (P0, T1, …), so the two sides compare. */
function renamer(projects: string[], tokens: string[]): (text: string) => string {
  return (text) => projects.reduce((t, p, i) => t.replaceAll(p, `P${i}`), tokens.reduce((t, k, i) => t.replaceAll(k, `T${i}`), text));
}

async function snapshot(ledger: Ledger, projects: string[], tokens: string[]): Promise<unknown> {
  const rename = renamer(projects, tokens);
  const balances = await balanceRows(ledger, projects);
  const payments = await paymentRows(ledger, { projectId: projects });
  const transactions = await transactionRows(ledger, { projectId: projects });
  const journal = await journalTotals(ledger, projects);
  const windows = await spendWindows(ledger, [...projects, ...tokens]);
  const state = {
    balances: balances.map((b) => ({ project_id: b.project_id, available_micros: Number(b.available_micros), held_micros: Number(b.held_micros) })),
    payments: payments.map((p) => ({ project_id: p.project_id, status: p.status, amount_micros: Number(p.amount_micros), fee_micros: Number(p.fee_micros), idempotency_key: p.idempotency_key, approval: p.approval, failure_code: p.failure_code, spend_windows: p.spend_windows })),
    transactions: transactions.map((t) => ({ project_id: t.project_id, type: t.type, status: t.status, amount: Number(t.amount), currency: t.currency, pos: Number(t.pos) })),
    journal,
    windows: windows.map((w) => ({ ...w, spent_micros: Number(w.spent_micros) })),
  };
  // Each list as a sorted multiset: ids made in the same millisecond sort by their random part.
  const renamed = JSON.parse(rename(JSON.stringify(state))) as Record<string, unknown[]>;
  return Object.fromEntries(Object.entries(renamed).map(([k, rows]) => [k, rows.map((r) => JSON.stringify(r)).sort()]));
}

let sqlite: TestDb;
let postgres: TestDb;
beforeAll(async () => {
  [sqlite, postgres] = await Promise.all([createTestDb("sqlite"), createTestDb("postgres")]);
});
afterAll(async () => {
  await Promise.all([sqlite?.drop(), postgres?.drop()]);
});

test("property: the TypeScript and the PL/pgSQL money rules answer and book every sequence alike", async () => {
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 40, size: "medium" }), fc.array(controlsArb, { minLength: 2, maxLength: 2 }), fc.option(controlsArb, { nil: null }), async (ops, tokenControls, projectControls) => {
      run++;
      // Funded first on both sides, so most payments are judged by the controls and not refused for the balance.
      const funded: Op[] = [{ kind: "deposit", project: 0, amount: 40 * USD }, { kind: "deposit", project: 1, amount: 40 * USD }, ...ops];
      const [a, b] = await Promise.all([
        play(ledgerOn(sqlite), `s${run}`, funded, tokenControls, projectControls),
        play(ledgerOn(postgres), `p${run}`, funded, tokenControls, projectControls),
      ]);
      expect(b.answers).toEqual(a.answers);
      expect(b.state).toEqual(a.state);
    }),
    {
      numRuns: 40,
      // A window filled to exactly its limit, then one micro-dollar more: the boundary each side must agree on.
      examples: [
        [
          [
            { kind: "pay", project: 0, token: 0, amount: 1_500_000, fee: 0, key: null, to: 0 },
            { kind: "pay", project: 0, token: 0, amount: 500_000, fee: 10_000, key: null, to: 0 },
            { kind: "pay", project: 0, token: 0, amount: 500_000, fee: 0, key: null, to: 0 },
            { kind: "resolve", pick: 1, outcome: "failed" },
            { kind: "pay", project: 0, token: 0, amount: 500_000, fee: 0, key: 1, to: 0 },
          ],
          [
            { perPayment: null, daily: 2 * USD, allowFirstOnly: false, approvalAbove: null },
            { perPayment: null, daily: null, allowFirstOnly: false, approvalAbove: null },
          ],
          null,
        ],
      ],
    },
  );
});
