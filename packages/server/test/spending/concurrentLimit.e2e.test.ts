import type { Address } from "viem";
import { describe, expect, test } from "vitest";
import { createChainClient } from "../../src/chain/chainClient.ts";
import { windowStart } from "../../src/domain/spending.ts";
import { openPayments, paymentRows } from "../../src/ledger/testing.ts";
import { useConcurrentPayments } from "../support/concurrentPayments.ts";
import { poll } from "../support/poll.ts";

const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe.each([
  ["sqlite", 1],
  ["postgres", 2],
] as const)("200 concurrent payments against a daily limit that covers exactly 10 (%s, %i server process(es))", (dialect, processes) => {
  // The balance covers 20 payments of 1 USDC + 0.02 fee; the daily limit 10.
  const hot = useConcurrentPayments(dialect, processes, { fundMicros: 20_400_000n, token: { controls: { spending_limits: [{ amount_usd: 10, interval: "daily" }] } } });

  test("exactly 10 succeed, 190 get 403 spending_limit_exceeded; balance and window exact; journal verifies; 10 USDC moved on-chain", async () => {
    const { dev, ledger, projectId } = hot;
    const client = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 });
    const r0 = await client.usdcBalance(recipient);
    const results = await hot.payAll<{ detail?: string; code?: string }>(200, { recipient, amount_usd: 1 });
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 403);
    const failed = (await paymentRows(ledger, { status: "failed" })).map((p) => ({ id: p.id, failure_reason: p.failure_reason }));
    expect(failed, `failed payments: ${JSON.stringify(failed)}\n${hot.output()}`).toEqual([]);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(190);
    for (const r of refused) {
      expect(r.body.code).toBe("spending_limit_exceeded");
      expect(r.body.detail).toMatch(/^Spending limit exceeded: the token's daily limit is 10.000000 USD; spent 10.000000 USD in the window .* remaining 0.000000 USD/);
    }
    await poll("all payments final", async () => {
      const open = await openPayments(ledger);
      return open.length === 0 ? true : undefined;
    });
    const b = (await ledger.balances.get(projectId))!;
    expect(b).toMatchObject({ available_micros: 10_200_000, held_micros: 0, total_spent_micros: 10_200_000 });
    expect(await ledger.payments.windowSpending([{ scopeId: (await ledger.tokens.list(projectId))[0]!.id, kind: "daily", start: windowStart("daily", new Date()) }])).toEqual([10_000_000]);
    expect((await ledger.verify()).problems).toEqual([]);
    expect((await client.usdcBalance(recipient)) - r0).toBe(10_000_000n);
    expect(await client.usdcBalance(hot.wallet)).toBe(10_200_000n);
  });
});
