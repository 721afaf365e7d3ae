/**
 * A running server's /metrics carries the health gauges the shipped alerts read, from its own chain and ledger:
 * after a funded payment, the relayer's ETH and a finite runway, the rails' open payment ages, the webhook
 * backlog and the deposit watcher's lag.
 */
import { afterAll, beforeAll, expect, test } from "vitest";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { poll } from "../support/poll.ts";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ database: "sqlite" });
  await s.fund(5_000_000n);
}, 120_000);
afterAll(async () => {
  await s?.stop();
});

/** One scrape: the value of each agentwallet_ sample by its name and labels. */
async function scrape(): Promise<Map<string, number>> {
  const text = await (await fetch(`${s.baseUrl}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const m of text.matchAll(/^(agentwallet_[a-z_]+(?:\{[^}]*\})?) (\S+)$/gm)) samples.set(m[1]!, m[2] === "+Inf" ? Number.POSITIVE_INFINITY : Number(m[2]));
  return samples;
}

test("default: the health gauges answer from the server's chain and ledger", { timeout: 120_000 }, async () => {
  const pay = await fetch(`${s.baseUrl}/v1/pay`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
    body: JSON.stringify({ recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906", amount_usd: 1 }),
  });
  expect(pay.status).toBe(201);
  const m = await poll("the relayer's runway at a payment a day", async () => {
    const x = await scrape();
    return Number.isFinite(x.get("agentwallet_relayer_runway_seconds")) ? x : undefined;
  });
  expect(m.get("agentwallet_relayer_balance_eth")).toBeGreaterThan(0);
  expect(m.get("agentwallet_relayer_runway_seconds")).toBeGreaterThan(86_400);
  expect(m.get('agentwallet_oldest_open_payment_age_seconds{rail="usdc_transfer"}')).toBeGreaterThanOrEqual(0);
  expect(m.get("agentwallet_webhook_undelivered")).toBe(0);
  expect(m.get("agentwallet_deposit_watcher_lag_blocks")).toBeGreaterThanOrEqual(0);
  expect(m.get("agentwallet_frozen_wallets")).toBe(0);
  // No reconcile has run on this deployment: unknown, not 0.
  expect(m.get("agentwallet_reconcile_drift_micros")).toBeNaN();
  // The server recorded the deployment at its start: the stale-reconcile alert counts from it.
  expect(m.get("agentwallet_deployment_created_timestamp_seconds")).toBeGreaterThan(0);
});
