/**
 * The health gauges an operator alerts on, read from a real ledger and the real local chain at scrape time:
 * the relayer's ETH, runway and whether it can pay gas, open payments per rail, the webhook backlog, the deposit watcher's lag and
 * the last reconcile. What cannot be read is NaN, never a 0 that looks like an empty relayer.
 */
import { formatEther } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { relayerConditionKey } from "../../src/chain/relayer.ts";
import { createMetrics } from "../../src/http/metrics.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { CHAIN_READ_MS, createHealthSignals } from "../../src/services/healthSignals.ts";
import { recordReconcile } from "../../src/services/reconcile.ts";
import { startTestChain, type TestChain } from "../support/chain.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "../support/db.ts";

let chain: TestChain;
beforeAll(async () => {
  chain = await startTestChain();
}, 60_000);
afterAll(async () => {
  await chain?.stop();
});

/** One scrape: every sample by its name and labels. */
async function scrape(registry: ReturnType<typeof createMetrics>["registry"]): Promise<Map<string, number>> {
  const samples = new Map<string, number>();
  for (const line of (await registry.metrics()).split("\n")) {
    const m = /^(agentwallet_[a-z_]+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (m) samples.set(m[1]!, m[2] === "+Inf" ? Number.POSITIVE_INFINITY : Number(m[2]));
  }
  return samples;
}

describe.each(dialects)("health gauges on %s", (dialect) => {
  let db: TestDb;
  let ledger: Ledger;
  beforeAll(async () => {
    db = await createTestDb(dialect);
    ledger = ledgerOn(db);
  });
  afterAll(async () => {
    await db?.drop();
  });

  test("default: the gauges answer from the ledger and the chain", async () => {
    const relayer = chain.dev.accounts.relayer.address;
    let nowMs = Date.now();
    const health = createHealthSignals({ ledger, chain: chain.client, relayerAddress: relayer, depositCursorKey: "deposits:cursor:base", depositConfirmations: 2, now: () => new Date(nowMs) });
    const { registry } = createMetrics({ health: () => health });

    let s = await scrape(registry);
    expect(s.get("agentwallet_relayer_balance_eth")).toBe(Number(formatEther(await chain.client.client.getBalance({ address: relayer }))));
    // No payment in the last day: no rate to run out at.
    expect(s.get("agentwallet_relayer_runway_seconds")).toBe(Number.POSITIVE_INFINITY);
    expect(s.get('agentwallet_oldest_open_payment_age_seconds{rail="usdc_transfer"}')).toBe(0);
    expect(s.get('agentwallet_oldest_open_payment_age_seconds{rail="fiat"}')).toBe(0);
    expect(s.get("agentwallet_webhook_undelivered")).toBe(0);
    expect(s.get("agentwallet_webhook_oldest_undelivered_age_seconds")).toBe(0);
    // No cursor yet, no reconcile yet: unknown, not 0.
    expect(s.get("agentwallet_deposit_watcher_lag_blocks")).toBeNaN();
    expect(s.get("agentwallet_reconcile_drift_micros")).toBeNaN();
    expect(s.get("agentwallet_reconcile_last_run_timestamp_seconds")).toBeNaN();
    // No server has recorded the deployment yet (the alert on a reconcile that never ran counts from it).
    expect(s.get("agentwallet_deployment_created_timestamp_seconds")).toBeNaN();

    // The watcher's cursor 10 blocks behind its confirmation depth.
    await chain.mine(20);
    const head = await chain.client.blockNumber();
    await ledger.kv.set("deposits:cursor:base", String(head - 2 - 10));
    await ledger.deployment.record({ mode: "test", chain_id: 8453, created_at: "2026-01-01T00:00:00.000Z" });
    await recordReconcile(ledger.kv, { ok: false, checked: 2, drifted: 1, rows: [{ drift_micros: -1_500_000 } as never, { drift_micros: 0 } as never], lost_legs: [], unmatched_refunds: [] }, new Date("2026-01-02T03:04:05Z"));
    // Past the chain reads' lifetime, so this scrape reads the new head.
    nowMs += CHAIN_READ_MS + 1;
    s = await scrape(registry);
    expect(s.get("agentwallet_deposit_watcher_lag_blocks")).toBe(10);
    expect(s.get("agentwallet_reconcile_drift_micros")).toBe(1_500_000);
    expect(s.get("agentwallet_reconcile_ok")).toBe(0);
    expect(s.get("agentwallet_reconcile_last_run_timestamp_seconds")).toBe(Date.parse("2026-01-02T03:04:05Z") / 1_000);
    expect(s.get("agentwallet_deployment_created_timestamp_seconds")).toBe(Date.parse("2026-01-01T00:00:00.000Z") / 1_000);
  });

  test("behavior: the relayer's condition is kept by the first process to see it, and read by every scrape", async () => {
    const health = createHealthSignals({ ledger, chain: chain.client, relayerAddress: chain.dev.accounts.relayer.address, depositCursorKey: "deposits:cursor:base", depositConfirmations: 2, now: () => new Date() });
    const { registry } = createMetrics({ health: () => health });
    expect((await scrape(registry)).get("agentwallet_relayer_unfunded")).toBe(0);
    // Two processes seeing the refusal at once: one `since`, the first writer's, for both.
    const key = relayerConditionKey(chain.dev.accounts.relayer.address);
    const seen = (since: string) => JSON.stringify({ code: "relayer_unfunded", detail: "no ETH", since });
    const answers = await Promise.all([ledger.kv.claim(key, seen("2026-01-01T00:00:00.000Z")), ledger.kv.claim(key, seen("2026-01-01T00:00:01.000Z"))]);
    expect(answers[1]).toBe(answers[0]);
    expect(await ledger.kv.claim(key, seen("2026-01-02T00:00:00.000Z"))).toBe(answers[0]);
    expect((await scrape(registry)).get("agentwallet_relayer_unfunded")).toBe(1);
    await ledger.kv.delete(key);
    expect((await scrape(registry)).get("agentwallet_relayer_unfunded")).toBe(0);
  });
});

test("behavior: before the server has its chain, the health gauges are NaN", async () => {
  const { registry } = createMetrics({ health: () => undefined });
  const s = await scrape(registry);
  expect(s.get("agentwallet_relayer_balance_eth")).toBeNaN();
  expect(s.get("agentwallet_webhook_undelivered")).toBeNaN();
});
