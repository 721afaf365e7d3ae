// Nested budgets under concurrency, through real server processes on a real chain: a parent with a daily
// limit of 10 USD and five children each allowed 5 USD (25 together). 500 concurrent payments of 0.10 USD
// spread over the children and the parent accept exactly 10 USD in all and never more than 5 USD for any
// child, on SQLite (one process) and on PostgreSQL with two server processes.
import type { Address } from "viem";
import { beforeAll, describe, expect, test } from "vitest";
import { windowStart } from "../../src/domain/spending.ts";
import { poll } from "../support/poll.ts";
import { openPayments, paymentRows } from "../../src/ledger/testing.ts";
import { useConcurrentPayments } from "../support/concurrentPayments.ts";

const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const PAYMENTS = 500;

describe.each([
  ["sqlite", 1],
  ["postgres", 2],
] as const)("500 concurrent payments over a parent (daily 10 USD) and five children (5 USD each) (%s, %i server process(es))", (dialect, processes) => {
  // The balance covers 300 payments of 0.10 USDC + 0.002 fee: the limits, not the balance, must stop them.
  const hot = useConcurrentPayments(dialect, processes, {
    fundMicros: 30_600_000n,
    token: { permissions: ["read", "pay", "delegate"], name: "planner", controls: { spending_limits: [{ amount_usd: 10, interval: "daily" }] } },
  });
  let parent: { id: string; token: string };
  let children: { id: string; token: string }[] = [];

  beforeAll(async () => {
    parent = { id: hot.tokenId, token: hot.token };
    // The children are made by the parent itself, through the API.
    children = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${hot.baseUrls[0]!}/v1/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${parent.token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `researcher ${i}`, permissions: ["pay"], allowance_usd: 5 }),
      });
      expect(res.status).toBe(201);
      children.push((await res.json()) as { id: string; token: string });
    }
  });

  test("exactly 10 USD accepted in all, at most 5 USD by any child; every refusal names the limit; the ledger verifies", async () => {
    // Half of the payments go to the first child, so its allowance is tested as hard as the parent's limit.
    const { ledger, projectId } = hot;
    const payerOf = (i: number) => (i % 10 === 0 ? parent : i % 2 === 1 ? children[0]! : children[1 + (i % 4)]!);
    const answers = await hot.payAll<{ code?: string; detail?: string }>(PAYMENTS, { recipient, amount_usd: 0.1 }, (i) => payerOf(i).token);
    const results = answers.map((a, i) => ({ payer: payerOf(i).id, ...a }));
    const accepted = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 403);
    expect(accepted.length + refused.length, JSON.stringify(results.filter((r) => r.status !== 201 && r.status !== 403).slice(0, 3))).toBe(PAYMENTS);
    expect(accepted).toHaveLength(100);
    for (const r of refused) expect(r.body.code).toBe("spending_limit_exceeded");
    for (const c of children) expect(accepted.filter((r) => r.payer === c.id).length).toBeLessThanOrEqual(50);
    const rows = await paymentRows(ledger, { projectId });
    expect(rows.reduce((s, r) => s + Number(r.amount_micros), 0)).toBe(10_000_000);
    for (const c of children) expect(rows.filter((r) => r.token_id === c.id).reduce((s, r) => s + Number(r.amount_micros), 0)).toBeLessThanOrEqual(5_000_000);
    // The counters agree: the parent's daily window holds everything, each child's allowance its own.
    const day = windowStart("daily", new Date());
    expect(await ledger.payments.windowSpending([{ scopeId: parent.id, kind: "daily", start: day }])).toEqual([10_000_000]);
    const childSpent = await ledger.payments.windowSpending(children.map((c) => ({ scope: "token" as const, scopeId: c.id, kind: "all_time", start: "all", projectId })));
    childSpent.forEach((s, i) => expect(s).toBe(rows.filter((r) => r.token_id === children[i]!.id).reduce((a, r) => a + Number(r.amount_micros), 0)));
    await poll(
      "all payments final",
      async () => ((await openPayments(ledger)).length === 0 ? true : undefined),
      120_000,
    );
    expect(await paymentRows(ledger, { status: "failed" })).toEqual([]);
    expect((await ledger.balances.get(projectId))!).toMatchObject({ available_micros: 30_600_000 - 10_200_000, held_micros: 0 });
    expect((await ledger.verify()).problems).toEqual([]);
    // 500 requests to two processes, then up to 120 s for the accepted ones to settle on-chain (the poll above).
  }, 300_000);
});
