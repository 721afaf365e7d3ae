import { Balance, PayResponse, TransactionList, LegacyPaymentResponse, UsdcTransferResponse } from "@agentwallet/api";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SANDBOX_FAIL_ACCOUNT, SANDBOX_RETURN_ACCOUNT } from "../../src/rails/fiat/sandboxProvider.ts";
import { poll } from "../support/poll.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { openPayments, paymentRows, relayerTxs } from "../../src/ledger/testing.ts";

const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe("payments end to end on a real chain (usdc_transfer and fiat rails)", () => {
  let s: TestServer;
  let call: (method: string, path: string, body?: unknown, headers?: Record<string, string>) => Promise<{ status: number; json: any; headers: Headers }>;
  beforeAll(async () => {
    s = await startTestServer({ env: { RATE_LIMIT_PER_MINUTE: "100000" } });
    await s.fund(200_000_000n);
    call = async (method, path, body, headers = {}) => {
      const res = await fetch(`${s.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, json: await res.json(), headers: res.headers };
    };
  });
  afterAll(async () => s?.stop());

  const chain = () => s.server.chain!.client;
  const payment = (id: string) => s.server.ctx.ledger.payments.getPayment(id);
  const settled = (id: string, statuses = ["completed", "failed", "reversed"]) => poll(`payment ${id}`, async () => {
    const p = await payment(id);
    return p && statuses.includes(p.status) ? p : undefined;
  });

  test("USDC: exactly the amount reaches the recipient and the fee the treasury; balance and transactions match", async () => {
    const treasury = s.server.chain!.treasuryAddress;
    const [r0, t0] = await Promise.all([chain().usdcBalance(recipient), chain().usdcBalance(treasury)]);
    const before = Balance.parse((await call("GET", "/v1/balance")).json);
    const res = await call("POST", "/v1/pay", { recipient, amount_usd: 12.345678, description: "API credits" });
    expect(res.status).toBe(201);
    const body = PayResponse.parse(res.json);
    expect(body).toMatchObject({ rail: "usdc_transfer", amount_charged: 12_345_678, fee: 246_914, currency: "usdc", recipient, estimated_arrival: null, response: null });
    expect(body.status).toBe("pending"); // accepted: recorded, submitted right after the answer
    const done = await settled(body.id);
    expect(done.status).toBe("completed");
    body.tx_hash = done.txHash;
    expect(body.tx_hash).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await chain().usdcBalance(recipient)) - r0).toBe(12_345_678n);
    expect((await chain().usdcBalance(treasury)) - t0).toBe(246_914n);
    const fresh = await call("GET", "/v1/transactions?limit=1");
    expect(fresh.json.transactions[0]).toMatchObject({ id: body.id, status: "completed" });
    const receipt = await chain().receipt(body.tx_hash as `0x${string}`);
    expect(receipt?.status).toBe("success");
    const after = Balance.parse((await call("GET", "/v1/balance")).json);
    expect(before.available - after.available).toBe(12_345_678 + 246_914);
    expect(after.total_spent - before.total_spent).toBe(12_345_678 + 246_914);
    const list = TransactionList.parse((await call("GET", "/v1/transactions?limit=2")).json);
    expect(list.transactions.map((t) => [t.type, t.status, t.amount, t.currency])).toEqual([
      ["usdc_transfer", "completed", 12_345_678, "usdc"],
      ["platform_fee", "completed", 246_914, "usdc"],
    ]);
    expect(list.transactions[0]!.id).toBe(body.id);
  });

  test("fiat: one completes, one fails and is credited back, one is returned after completion and becomes reversed", async () => {
    const bank = (account_number: string) => ({ name: `Payee ${account_number}`, account_number, routing_number: "021000021" });
    const before = Balance.parse((await call("GET", "/v1/balance")).json);
    const ok = PayResponse.parse((await call("POST", "/v1/pay", { recipient: bank("12345678"), amount_usd: 10.25 })).json);
    expect(ok).toMatchObject({ rail: "fiat", amount_charged: 1025, fee: 21, currency: "usd", recipient: "Payee 12345678", tx_hash: null, estimated_arrival: "2-3 business days", response: null });
    const bad = PayResponse.parse((await call("POST", "/v1/pay", { recipient: bank(SANDBOX_FAIL_ACCOUNT), amount_usd: 3 })).json);
    const ret = PayResponse.parse((await call("POST", "/v1/pay", { recipient: bank(SANDBOX_RETURN_ACCOUNT), amount_usd: 4 })).json);
    expect((await settled(ok.id)).status).toBe("completed");
    expect((await settled(bad.id, ["failed"])).status).toBe("failed");
    expect((await settled(ret.id, ["reversed"])).status).toBe("reversed");
    const after = Balance.parse((await call("GET", "/v1/balance")).json);
    // The completed one costs 10.25 USD + 0.21 fee; the returned one its 0.08 fee: 10,540,000 micro-USDC.
    expect(before.available - after.available).toBe(10_540_000);
    const list = TransactionList.parse((await call("GET", "/v1/transactions?limit=6")).json);
    const byStatus = list.transactions.map((t) => [t.type, t.status, t.amount, t.currency]);
    expect(byStatus).toEqual(expect.arrayContaining([
      ["payment", "completed", 1025, "usd"], ["platform_fee", "completed", 21, "usd"],
      ["payment", "failed", 300, "usd"], ["platform_fee", "failed", 6, "usd"],
      ["payment", "reversed", 400, "usd"], ["platform_fee", "completed", 8, "usd"],
    ]));
    // The off-ramp's on-chain refunds are not taken for deposits.
    expect(after.total_funded).toBe(before.total_funded);
    // Each says why, with the bank's own words.
    const why = new Map(list.transactions.map((t) => [t.id, [t.failure_code, t.failure_message]]));
    expect(why.get(ok.id)).toEqual([undefined, undefined]);
    expect(why.get(bad.id)).toEqual(["payout_failed", expect.stringMatching(/^R03/)]);
    expect(why.get(ret.id)).toEqual(["ach_returned", expect.stringMatching(/^R01/)]);
  });

  test("deprecated endpoints run through the same core with their own shapes; /v1/payments replays with 200", async () => {
    const legacy = await call("POST", "/v1/payments", { amount: 2500, recipient: { name: "Old Client", account_number: "99887766", routing_number: "021000021" }, idempotency_key: "legacy-1" });
    expect(legacy.status).toBe(201);
    const lp = LegacyPaymentResponse.parse(legacy.json);
    expect(lp).toMatchObject({ amount: 2500, recipient_name: "Old Client", estimated_arrival: "2-3 business days" });
    const replay = await call("POST", "/v1/payments", { amount: 1, recipient: { name: "Changed", account_number: "1234", routing_number: "021000021" }, idempotency_key: "legacy-1" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(LegacyPaymentResponse.parse(replay.json).id).toBe(lp.id);
    const usdc = await call("POST", "/v1/usdc/transfer", { amount_usdc: 1.5, to_address: recipient });
    expect(usdc.status).toBe(201);
    expect(UsdcTransferResponse.parse(usdc.json)).toMatchObject({ amount_usdc: 1.5, fee_usdc: 0.03, to_address: recipient, chain: "base" });
    expect((await settled(usdc.json.id)).status).toBe("completed");
  });

  test("100 concurrent requests with one idempotency key → one payment and one on-chain transfer", async () => {
    const r0 = await chain().usdcBalance(recipient);
    const results = await Promise.all(Array.from({ length: 100 }, () => call("POST", "/v1/pay", { recipient, amount_usd: 0.777, idempotency_key: "same-key-100" })));
    const created = results.filter((r) => r.status === 201);
    const replayed = results.filter((r) => r.status === 200);
    const inFlight = results.filter((r) => r.status === 409);
    expect(created).toHaveLength(1);
    expect(created.length + replayed.length + inFlight.length).toBe(100);
    for (const r of [...replayed]) expect(r.json.id).toBe(created[0]!.json.id);
    for (const r of inFlight) expect(r.json.detail).toMatch(/still being processed/);
    await settled(created[0]!.json.id);
    const again = await call("POST", "/v1/pay", { recipient, amount_usd: 0.777, idempotency_key: "same-key-100" });
    expect(again.status).toBe(200);
    expect(again.json.status).toBe("completed");
    expect((await chain().usdcBalance(recipient)) - r0).toBe(777_000n);
    const rows = await paymentRows(s.server.ctx.ledger, { idempotencyKey: "same-key-100" });
    expect(rows).toHaveLength(1);
    const relayed = await relayerTxs(s.server.ctx.ledger, { paymentId: rows[0]!.id });
    expect(relayed).toHaveLength(1);
  });

  test("an insufficient balance is a 400 that states available and required", async () => {
    const res = await call("POST", "/v1/pay", { recipient, amount_usd: 100000 });
    expect(res.status).toBe(400);
    expect(res.json.detail).toMatch(/^Insufficient balance: available \d+\.\d{6} USDC, required 102000\.000000 USDC \(amount 100000\.000000 \+ fee 2000\.000000\)/);
  });

  test("the ledger verifies and, with no payment open, the wallet on-chain equals available + held", async () => {
    await poll("no open payments", async () => {
      const open = await openPayments(s.server.ctx.ledger);
      return open.length === 0 ? true : undefined;
    });
    expect((await s.server.ctx.ledger.verify()).problems).toEqual([]);
    const bal = Balance.parse((await call("GET", "/v1/balance")).json);
    const onChain = await chain().usdcBalance(bal.wallet_address as Address);
    const b = (await s.server.ctx.ledger.balances.get(s.projectId))!;
    expect(Number(onChain)).toBe(b.available_micros + b.held_micros);
  });
});
