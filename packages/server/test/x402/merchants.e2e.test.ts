// The real server pays real x402 merchants: `@x402/express` (v2) and `x402-express` 1.x (v1), both
// settling through x402's own facilitator code on loopback HTTP, against the test USDC on anvil.
// Nothing of ours pretends to be a merchant here; every figure is read back from the chain.
import { X402PayResponse } from "@agentwallet/api";
import { type Hex, parseEventLogs } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { usdcAbi } from "../../src/chain/chainClient.ts";
import { feeFor } from "../../src/money.ts";
import { type X402World, startX402World } from "./support/x402World.ts";

const PRICE_V2_MICROS = 10_000n;
const PRICE_V1_MICROS = 25_000n;
const FUND_MICROS = 5_000_000n;

describe.each(["sqlite", "postgres"] as const)("on %s", (database) => {
  let w: X402World;
  let v2: Awaited<ReturnType<X402World["startMerchant"]>>;
  let v1: Awaited<ReturnType<X402World["startMerchant"]>>;

  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: FUND_MICROS });
    v2 = await w.startMerchant(2, PRICE_V2_MICROS);
    v1 = await w.startMerchant(1, PRICE_V1_MICROS);
  });
  afterAll(async () => {
    await w?.stop();
  });

  const snapshot = async (payTo: `0x${string}`) => ({
    merchant: await w.balanceOf(payTo),
    treasury: await w.balanceOf(w.treasury),
    wallet: await w.balanceOf(await w.wallet()),
    available: (await w.get("/v1/balance")).body.available as number,
  });

  describe.each([
    { version: 2 as const, merchant: () => v2, price: PRICE_V2_MICROS },
    { version: 1 as const, merchant: () => v1, price: PRICE_V1_MICROS },
  ])("v$version merchant", ({ version, merchant, price }) => {
    test("behavior: POST /v1/pay pays exactly the price on-chain, the fee reaches the treasury, and the ledger matches", async () => {
      const fee = BigInt(feeFor(Number(price), "free"));
      const before = await snapshot(merchant().payTo);
      const signaturesBefore = w.signatures.count();

      const answer = await w.post("/v1/pay", { recipient: `${merchant().url}/paid`, max_amount_usdc: Number(price), description: "forecast" });

      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      // Answered with the merchant's reply; its settlement is proven on-chain and recorded right after (tx_hash), and
      // the payment completes once the fee reached the treasury.
      expect(answer.body).toMatchObject({ status: "processing", rail: "x402", amount_charged: Number(price), fee: Number(fee), currency: "usdc", recipient: `${merchant().url}/paid`, tx_hash: null });
      expect(await w.settle(answer.body.id as string)).toBe("completed");
      expect(JSON.parse((answer.body.response as { body: string }).body)).toEqual({ paid: true });
      const response = answer.body.response as { status_code: number; headers: Record<string, string> };
      expect(response.status_code).toBe(200);
      // End-to-end headers come back (the receipt among them); hop-by-hop ones describe our connection, not the reply.
      expect(Object.keys(response.headers)).toContain(version === 2 ? "payment-response" : "x-payment-response");
      expect(Object.keys(response.headers)).not.toContain("connection");
      const after = await snapshot(merchant().payTo);
      expect(after.merchant - before.merchant).toBe(price);
      expect(after.treasury - before.treasury).toBe(fee);
      expect(before.wallet - after.wallet).toBe(price + fee);
      expect(before.available - after.available).toBe(Number(price + fee));
      // One signature for the merchant, one for the fee sweep: nothing else was signed.
      expect(w.signatures.count() - signaturesBefore).toBe(2);

      // tx_hash is the merchant's settlement: the transfer of exactly the price to payTo.
      const txHash = (await w.get(`/v1/transactions/${answer.body.id as string}`)).body.tx_hash as Hex;
      expect(txHash).toMatch(/^0x[0-9a-f]{64}$/);
      const receipt = await w.server.server.chain!.client.receipt(txHash);
      const transfers = parseEventLogs({ abi: usdcAbi, eventName: "Transfer", logs: receipt!.logs });
      expect(transfers).toContainEqual(expect.objectContaining({ args: { from: await w.wallet(), to: merchant().payTo, value: price } }));

      const txns = (await w.get("/v1/transactions?limit=2")).body.transactions as Record<string, unknown>[];
      expect(txns).toEqual([
        expect.objectContaining({ id: answer.body.id, type: "x402_payment", status: "completed", amount: Number(price), currency: "usdc", description: "forecast" }),
        expect.objectContaining({ type: "platform_fee", status: "completed", amount: Number(fee), currency: "usdc" }),
      ]);
    });

    test("behavior: a paid POST forwards the method, headers and body, and returns the target's reply", async () => {
      const sent = JSON.stringify({ query: "weather", at: Date.now() });
      const answer = await w.post("/v1/pay", { recipient: `${merchant().url}/paid`, method: "POST", headers: { "content-type": "application/json" }, body: sent });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toMatchObject({ status: "processing", amount_charged: Number(price) });
      expect(await w.settle(answer.body.id as string)).toBe("completed");
      expect((answer.body.response as { body: string }).body).toBe(sent);
    });

    test("behavior: the deprecated POST /v1/x402/pay answers its own shape with the settlement", async () => {
      const before = await snapshot(merchant().payTo);
      const answer = await w.post("/v1/x402/pay", { url: `${merchant().url}/paid`, max_amount_usdc: Number(price) });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const body = X402PayResponse.strict().parse(answer.body);
      expect(body).toMatchObject({ status_code: 200, payment_amount: Number(price), fee_amount: feeFor(Number(price), "free"), settled: true });
      expect(JSON.parse(body.body)).toEqual({ paid: true });
      expect(body.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
      expect((await w.balanceOf(merchant().payTo)) - before.merchant).toBe(price);
      const id = (await w.get("/v1/transactions?limit=1")).body.transactions as { id: string }[];
      expect(await w.settle(id[0]!.id)).toBe("completed");
    });

    test("error: a price above max_amount_usdc is refused with 400 before anything is signed", async () => {
      const before = await snapshot(merchant().payTo);
      const signaturesBefore = w.signatures.count();
      const answer = await w.post("/v1/pay", { recipient: `${merchant().url}/paid`, max_amount_usdc: Number(price) - 1 });
      expect(answer.status).toBe(400);
      expect(answer.body.code).toBe("x402_price_above_max");
      expect(answer.body.detail).toContain(`${price} micro-USDC`);
      expect(w.signatures.count()).toBe(signaturesBefore);
      expect(await snapshot(merchant().payTo)).toEqual(before);
    });

    test("behavior: a URL that does not answer 402 passes through free and records nothing", async () => {
      const before = await snapshot(merchant().payTo);
      const count = (await w.get("/v1/transactions?limit=1")).body.total_count;
      const signaturesBefore = w.signatures.count();
      const answer = await w.post("/v1/pay", { recipient: `${merchant().url}/free` });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: "completed", rail: "x402", amount_charged: 0, fee: 0, tx_hash: null, response: { status_code: 200 } });
      expect(answer.body.id).toMatch(/^req_/);
      expect(JSON.parse((answer.body.response as { body: string }).body)).toEqual({ free: true });
      expect((await w.get("/v1/transactions?limit=1")).body.total_count).toBe(count);
      expect(w.signatures.count()).toBe(signaturesBefore);
      expect(await snapshot(merchant().payTo)).toEqual(before);

      const legacy = await w.post("/v1/x402/pay", { url: `${merchant().url}/free`, max_amount_usdc: 1 });
      expect(X402PayResponse.strict().parse(legacy.body)).toMatchObject({ status_code: 200, payment_amount: 0, fee_amount: 0, tx_hash: null, settled: false });
    });
  });

  test("behavior: 20 concurrent requests with one idempotency key make one merchant payment and one signature", async () => {
    const before = await snapshot(v2.payTo);
    const signaturesBefore = w.signatures.count();
    const body = { recipient: `${v2.url}/paid`, max_amount_usdc: Number(PRICE_V2_MICROS), idempotency_key: `concurrent-${database}` };
    const answers = await Promise.all(Array.from({ length: 20 }, () => w.post("/v1/pay", body)));

    const statuses = answers.map((a) => a.status);
    expect(statuses.every((s) => s === 200 || s === 409), statuses.join(",")).toBe(true);
    const fresh = answers.filter((a) => a.status === 200 && a.headers.get("idempotent-replayed") === null);
    expect(fresh).toHaveLength(1);
    const id = fresh[0]!.body.id;
    for (const a of answers.filter((x) => x.status === 200)) expect(a.body.id).toBe(id);
    for (const a of answers.filter((x) => x.status === 409)) expect(a.body.code).toBe("idempotency_in_flight");
    // Completed: the fee's authorization (the second signature) is signed by then, not at some later turn.
    expect(await w.settle(id as string)).toBe("completed");

    const after = await snapshot(v2.payTo);
    expect(after.merchant - before.merchant).toBe(PRICE_V2_MICROS);
    expect(w.signatures.count() - signaturesBefore).toBe(2);

    // Afterwards the key returns the original payment, and still signs nothing.
    const replay = await w.post("/v1/pay", body);
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.body.id).toBe(id);
    expect(w.signatures.count() - signaturesBefore).toBe(2);
    expect((await w.balanceOf(v2.payTo)) - before.merchant).toBe(PRICE_V2_MICROS);
  });

  test("behavior: an idempotency key used for a free reply returns it again without a second request", async () => {
    let requests = 0;
    const { createServer } = await import("node:http");
    const target = createServer((_req, res) => {
      requests += 1;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ n: requests }));
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    const url = `http://127.0.0.1:${(target.address() as { port: number }).port}/count`;
    try {
      const body = { recipient: url, method: "POST", body: "once", idempotency_key: `free-${database}` };
      const first = await w.post("/v1/pay", body);
      const second = await w.post("/v1/pay", body);
      expect(first.status).toBe(200);
      expect(second.status).toBe(200);
      expect(second.headers.get("idempotent-replayed")).toBe("true");
      expect(second.body).toEqual(first.body);
      expect(requests).toBe(1);
    } finally {
      target.close();
    }
  });

  test("behavior: a paused project reads back its x402 payments by key (paid and free), and nothing new is requested or signed", async () => {
    const paid = await w.post("/v1/pay", { recipient: `${v2.url}/paid`, max_amount_usdc: Number(PRICE_V2_MICROS), idempotency_key: `paused-paid-${database}` });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(await w.settle(paid.body.id as string)).toBe("completed");
    const free = await w.post("/v1/pay", { recipient: `${v2.url}/free`, idempotency_key: `paused-free-${database}` });
    expect(free.status).toBe(200);
    await w.ctx.ledger.projects.setPaused(w.server.projectId, true);
    try {
      const signaturesBefore = w.signatures.count();
      const replayPaid = await w.post("/v1/pay", { recipient: `${v2.url}/paid`, max_amount_usdc: Number(PRICE_V2_MICROS), idempotency_key: `paused-paid-${database}` });
      expect(replayPaid.status).toBe(200);
      expect(replayPaid.headers.get("idempotent-replayed")).toBe("true");
      expect(replayPaid.body).toMatchObject({ id: paid.body.id, status: "completed" });
      const replayFree = await w.post("/v1/pay", { recipient: `${v2.url}/free`, idempotency_key: `paused-free-${database}` });
      expect(replayFree.status).toBe(200);
      expect(replayFree.headers.get("idempotent-replayed")).toBe("true");
      expect(replayFree.body).toEqual(free.body);
      const fresh = await w.post("/v1/pay", { recipient: `${v2.url}/paid`, max_amount_usdc: Number(PRICE_V2_MICROS), idempotency_key: `paused-new-${database}` });
      expect(fresh.status).toBe(403);
      expect(fresh.body.code).toBe("project_paused");
      expect(w.signatures.count()).toBe(signaturesBefore);
    } finally {
      await w.ctx.ledger.projects.setPaused(w.server.projectId, false);
    }
  });
});
