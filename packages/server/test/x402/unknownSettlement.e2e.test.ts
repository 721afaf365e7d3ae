// A merchant that takes the signature and then errs, lies, stalls or vanishes. Whatever it answers to
// the paid retry, a payment without on-chain proof stays `processing`, and the worker drives it to the
// right end from the chain: completed (with the settlement's own transaction) when the authorization
// was used, failed and credited back once validBefore has passed unused — never both. The settling is
// done by x402's own facilitator; the misbehaving merchant around it is hand-built (no honest merchant
// does this), except where a real @x402/express merchant shows the same case.
import { randomBytes } from "node:crypto";
import { HTTPFacilitatorClient } from "@x402/core/server";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddlewareFromHTTPServer, x402HTTPResourceServer, x402ResourceServer } from "@x402/express";
import express from "express";
import { type Address, parseEventLogs } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { usdcAbi } from "../../src/chain/chainClient.ts";
import { authorizationUsedIn } from "../../src/rails/eip3009.ts";
import { x402States } from "../../src/rails/x402/x402State.ts";
import { feeFor } from "../../src/money.ts";
import { reconcile } from "../../src/services/reconcile.ts";
import { startCountingListener } from "../support/ssrfTargets.ts";
import { type HandBuiltTarget, type Reply, type TargetRequest, decodePaymentHeader, startHandBuiltTarget, v2PaymentRequired } from "./support/handBuiltTarget.ts";
import { type X402World, randomAddress, startX402World } from "./support/x402World.ts";
import { openPayments, paymentRows, relayerTxs, transactionRows } from "../../src/ledger/testing.ts";

const PRICE = 10_000n;
const FEE = BigInt(feeFor(Number(PRICE), "free"));
/**
 * Short, so an unsettled authorization expires within the test (the chain mines a block a second), and
 * above the 6 s that x402's facilitator wants left on an authorization it settles.
 */
const VALIDITY_SECONDS = 8;
const TIMEOUT_MS = 2_000;
const FUND_MICROS = 5_000_000n;

let w: X402World;
beforeAll(async () => {
  w = await startX402World({ fundMicros: FUND_MICROS, env: { X402_TIMEOUT_MS: String(TIMEOUT_MS) } });
});
afterAll(async () => {
  await w?.stop();
});

type Rogue = { target: HandBuiltTarget; payTo: Address; url: string; settlements: string[] };

/** A target that asks PRICE by x402 v2 and lets `onPaid` decide what happens to the signature. */
async function startRogue(onPaid: (req: TargetRequest, settle: () => Promise<string>) => Promise<Reply | undefined>): Promise<Rogue> {
  const payTo = randomAddress();
  const requirement = { scheme: "exact", network: "eip155:8453", amount: String(PRICE), asset: w.usdc, payTo, maxTimeoutSeconds: VALIDITY_SECONDS, extra: { name: "USD Coin", version: "2" } };
  const settlements: string[] = [];
  const target = await startHandBuiltTarget((req) => {
    if (!req.paymentHeader) return v2PaymentRequired([requirement]);
    const header = req.paymentHeader;
    const settle = async () => {
      const response = await fetch(`${w.facilitator.url}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ x402Version: 2, paymentPayload: decodePaymentHeader(header), paymentRequirements: requirement }),
      });
      const result = (await response.json()) as { success: boolean; transaction: string; errorReason?: string };
      if (!result.success) throw new Error(`facilitator refused to settle: ${result.errorReason}`);
      settlements.push(result.transaction);
      return result.transaction;
    };
    return onPaid(req, settle);
  });
  rogues.push(target);
  return { target, payTo, url: `${target.url}/paid`, settlements };
}
const rogues: HandBuiltTarget[] = [];
afterAll(async () => {
  await Promise.all(rogues.map((r) => r.close()));
});

const receiptHeader = (body: Record<string, unknown>) => ({ "payment-response": Buffer.from(JSON.stringify(body)).toString("base64") });

/** Completed from the chain: the settlement's own transaction, exactly the price to payTo, the fee swept. */
async function expectCompleted(rogue: Rogue, paymentId: string) {
  expect(await w.settle(paymentId)).toBe("completed");
  const payment = (await w.ctx.ledger.payments.getPayment(paymentId))!;
  expect(rogue.settlements).toHaveLength(1);
  expect(payment.txHash).toBe(rogue.settlements[0]);
  expect(await w.balanceOf(rogue.payTo)).toBe(PRICE);
  const state = x402States.read(payment);
  if (state.stage !== "settled" || !state.feeSweep) throw new Error(`payment ${paymentId} completed without a recorded fee sweep (${state.stage})`);
  const sweep = state.feeSweep;
  const receipt = await w.server.server.chain!.client.receipt(sweep.hash);
  // The sweep may share its relayer transaction with other payments' sweeps: this payment's own
  // authorization was used in it, and everything it moved is a fee from the wallet to the treasury.
  expect(authorizationUsedIn(receipt!.logs, w.server.server.chain!.client.usdcAddress, sweep.transfers[0]!)).toBe(true);
  const moved = parseEventLogs({ abi: usdcAbi, eventName: "Transfer", logs: receipt!.logs }).map((l) => l.args);
  expect(moved.length).toBeGreaterThanOrEqual(1);
  for (const m of moved) expect(m).toEqual({ from: await w.wallet(), to: w.treasury, value: FEE });
  expect(await txnStatuses(paymentId)).toEqual(["completed", "completed"]);
}

/** Failed once validBefore passed unused: nothing reached the merchant or the treasury, all credited back. */
async function expectFailedAndCredited(rogue: Rogue, paymentId: string) {
  expect(await w.settle(paymentId)).toBe("failed");
  const payment = (await w.ctx.ledger.payments.getPayment(paymentId))!;
  expect(payment.txHash).toBeNull();
  expect(payment.failureReason).toMatch(/expired/);
  expect(await w.balanceOf(rogue.payTo)).toBe(0n);
  expect(x402States.read(payment).stage).toBe("signed");
  expect(await relayerTxs(w.ctx.ledger, { paymentId })).toEqual([]);
  expect(await txnStatuses(paymentId)).toEqual(["failed", "failed"]);
}

const availableNow = async () => (await w.get("/v1/balance")).body.available as number;

async function txnStatuses(paymentId: string): Promise<string[]> {
  const rows = await transactionRows(w.ctx.ledger, { paymentId });
  return rows.map((r) => r.status);
}

// Concurrent: each case waits for its own authorization to expire; balances are checked once at the end.
describe.concurrent("the merchant takes the signature, then", () => {
  test("behavior: settles and answers 500 → processing, then completed with the on-chain settlement", async () => {
    const rogue = await startRogue(async (_req, settle) => {
      await settle();
      return { status: 500, body: "handler crashed after settling" };
    });
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: "processing", amount_charged: Number(PRICE), tx_hash: null, response: { status_code: 500, body: "handler crashed after settling" } });
    await expectCompleted(rogue, answer.body.id as string);
  });

  test("behavior: answers 500 without settling → processing, then failed and credited back after validBefore", async () => {
    const rogue = await startRogue(async () => ({ status: 500, body: "no" }));
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.body).toMatchObject({ status: "processing", response: { status_code: 500 } });
    await expectFailedAndCredited(rogue, answer.body.id as string);
  });

  test("behavior: settles but answers 402 'settlement failed' → still completed from the chain", async () => {
    const rogue = await startRogue(async (_req, settle) => {
      await settle();
      return { status: 402, headers: receiptHeader({ success: false, errorReason: "unexpected_settle_error", transaction: "", network: "eip155:8453" }), body: "{}" };
    });
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.body).toMatchObject({ status: "processing", response: { status_code: 402 } });
    await expectCompleted(rogue, answer.body.id as string);
  });

  test("behavior: answers 402 'settlement failed' and did not settle → processing, then failed", async () => {
    const rogue = await startRogue(async () => ({ status: 402, headers: receiptHeader({ success: false, errorReason: "insufficient_funds", transaction: "", network: "eip155:8453" }), body: "{}" }));
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.body.status).toBe("processing");
    await expectFailedAndCredited(rogue, answer.body.id as string);
  });

  test("error: a receipt claiming success with a made-up transaction is not believed", async () => {
    const fake = `0x${randomBytes(32).toString("hex")}`;
    const rogue = await startRogue(async () => ({ status: 200, headers: receiptHeader({ success: true, transaction: fake, network: "eip155:8453" }), body: "{\"paid\":true}" }));
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.body).toMatchObject({ status: "processing", tx_hash: null });
    await expectFailedAndCredited(rogue, answer.body.id as string);
  });

  test("behavior: answers 500 and settles a second later → the worker sees it and completes", async () => {
    const rogue = await startRogue(async (_req, settle) => {
      setTimeout(() => void settle().catch(() => undefined), 1_000);
      return { status: 500 };
    });
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.body.status).toBe("processing");
    await expectCompleted(rogue, answer.body.id as string);
  });

  test("behavior: stalls past the timeout after settling → processing without a response, then completed", async () => {
    const rogue = await startRogue(async (_req, settle) => {
      await settle();
      await new Promise((r) => setTimeout(r, TIMEOUT_MS + 500));
      return { status: 200, body: "too late" };
    });
    const answer = await w.post("/v1/pay", { recipient: rogue.url });
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: "processing", response: null });
    await expectCompleted(rogue, answer.body.id as string);
  });

  test("behavior: redirects the paid retry to an internal address → not followed, processing, then failed", async () => {
    const listener = await startCountingListener();
    try {
      const rogue = await startRogue(async () => ({ status: 302, headers: { location: `http://127.0.0.1:${listener.port}/steal` } }));
        const answer = await w.post("/v1/pay", { recipient: rogue.url });
      expect(answer.body).toMatchObject({ status: "processing", response: { status_code: 302 } });
      await expectFailedAndCredited(rogue, answer.body.id as string);
      expect(listener.connections()).toBe(0);
    } finally {
      await listener.close();
    }
  });

  test("behavior: a repeat of the idempotency key while processing returns the same payment, never a new request or signature", async () => {
    const rogue = await startRogue(async () => ({ status: 500 }));
    const body = { recipient: rogue.url, idempotency_key: `processing-${Date.now()}` };
    const first = await w.post("/v1/pay", body);
    const signatures = w.signatures.count();
    const requests = rogue.target.requests.length;
    const again = await w.post("/v1/pay", body);
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body.id).toBe(first.body.id);
    expect(w.signatures.count()).toBe(signatures);
    expect(rogue.target.requests.length).toBe(requests);
    expect(await w.settle(first.body.id as string)).toBe("failed");
  });

  test("behavior: the deprecated endpoint reports the unknown settlement as settled: false", async () => {
    const rogue = await startRogue(async () => ({ status: 500, body: "no" }));
    const answer = await w.post("/v1/x402/pay", { url: rogue.url, max_amount_usdc: Number(PRICE) });
    expect(answer.status).toBe(200);
    expect(answer.body).toEqual({ status_code: 500, headers: expect.any(Object), body: "no", payment_amount: Number(PRICE), fee_amount: Number(FEE), tx_hash: null, settled: false });
    const id = (await paymentRows(w.ctx.ledger, { recipient: rogue.url }))[0]!.id;
    expect(await w.settle(id)).toBe("failed");
  });
});

describe("the signed payment never leaves", () => {
  test("error: the target is gone before the paid retry → 502, nothing charged, the hold released at once", async () => {
    let target: HandBuiltTarget | undefined;
    const payTo = randomAddress();
    target = await startHandBuiltTarget(() => {
      // Answer 402, then stop listening: the paid retry cannot connect.
      setImmediate(() => void target!.close());
      return v2PaymentRequired([{ scheme: "exact", network: "eip155:8453", amount: String(PRICE), asset: w.usdc, payTo, maxTimeoutSeconds: 60, extra: { name: "USD Coin", version: "2" } }]);
    });
    const available = await availableNow();
    const count = (await w.get("/v1/transactions?limit=1")).body.total_count as number;
    const answer = await w.post("/v1/pay", { recipient: `${target.url}/paid` });
    expect(answer.status).toBe(502);
    expect(answer.body.code).toBe("connect_failed");
    expect(answer.body.detail).toMatch(/never reached the target, so nothing was charged/);
    expect(await availableNow()).toBe(available);
    const txns = (await w.get("/v1/transactions?limit=2")).body;
    expect(txns.total_count).toBe(count + 2);
    expect((txns.transactions as { status: string }[]).map((t) => t.status)).toEqual(["failed", "failed"]);
    expect(await w.balanceOf(payTo)).toBe(0n);
  });
});

test("behavior: a real @x402/express merchant whose handler fails never settles → processing, then failed", async () => {
  const payTo = randomAddress();
  const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: w.facilitator.url, timeoutMs: 10_000 })).register("eip155:8453", new ExactEvmScheme());
  const httpServer = new x402HTTPResourceServer(resourceServer, {
    "/paid": { accepts: { scheme: "exact", network: "eip155:8453", payTo, price: { amount: String(PRICE), asset: w.usdc, extra: { name: "USD Coin", version: "2" } }, maxTimeoutSeconds: VALIDITY_SECONDS }, description: "fails", mimeType: "application/json" },
  });
  await httpServer.initialize();
  const app = express();
  app.use(paymentMiddlewareFromHTTPServer(httpServer, undefined, undefined, false));
  app.get("/paid", (_req, res) => {
    res.status(500).json({ error: "upstream model crashed" });
  });
  const listening = await new Promise<import("node:http").Server>((r) => {
    const s = app.listen(0, "127.0.0.1", () => r(s));
  });
  try {
    const url = `http://127.0.0.1:${(listening.address() as { port: number }).port}/paid`;
    const answer = await w.post("/v1/pay", { recipient: url });
    // The middleware does not settle when the handler fails, and answers 402 instead of the handler's 500.
    expect(answer.body).toMatchObject({ status: "processing", tx_hash: null });
    expect((answer.body.response as { status_code: number }).status_code).not.toBe(200);
    expect(await w.settle(answer.body.id as string)).toBe("failed");
    expect(await w.balanceOf(payTo)).toBe(0n);
    expect(await txnStatuses(answer.body.id as string)).toEqual(["failed", "failed"]);
  } finally {
    listening.closeAllConnections();
    await new Promise((r) => listening.close(r));
  }
});

test("behavior: afterwards the ledger verifies, the balance is the fund minus the completed payments, and the wallet reconciles", async () => {
  const open = await openPayments(w.ctx.ledger);
  for (const { id } of open) await w.settle(id);
  const completed = await paymentRows(w.ctx.ledger, { status: "completed" });
  expect(completed.length).toBeGreaterThanOrEqual(4);
  const spent = completed.reduce((s, p) => s + p.amount_micros + p.fee_micros, 0);
  expect(await availableNow()).toBe(Number(FUND_MICROS) - spent);
  expect(await w.balanceOf(await w.wallet())).toBe(FUND_MICROS - BigInt(spent));
  expect((await w.ctx.ledger.verify()).problems).toEqual([]);
  const report = await reconcile(w.ctx.ledger, (a) => w.balanceOf(a));
  expect(report.rows.filter((r) => r.drift_micros !== 0)).toEqual([]);
  expect(report.ok).toBe(true);
});
