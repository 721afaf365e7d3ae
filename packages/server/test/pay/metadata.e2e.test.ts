// Payments carry the caller's metadata wherever they are shown; the Idempotency-Key header stands for the
// body's key; the deprecated endpoints say so in their headers. On a real chain, with a real x402 merchant.
import { ErrorBody, LegacyPaymentResponse, PayResponse, TransactionDetail, TransactionList, UsdcTransferResponse, X402PayResponse } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type X402World, startX402World } from "../x402/support/x402World.ts";

const address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const bank = { name: "Payee", account_number: "12345678", routing_number: "021000021" };

describe.each(["sqlite", "postgres"] as const)("on %s", (database) => {
  let w: X402World;
  let merchant: Awaited<ReturnType<X402World["startMerchant"]>>;
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 50_000_000n });
    merchant = await w.startMerchant(2, 10_000n);
  });
  afterAll(async () => w?.stop());

  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${w.server.baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${w.server.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: res.status, json: (await res.json()) as any, headers: res.headers };
  };
  const shown = async (id: string) => ({
    byId: TransactionDetail.parse((await call("GET", `/v1/transactions/${id}`)).json).metadata,
    inList: TransactionList.parse((await call("GET", "/v1/transactions?limit=200")).json).transactions.find((x) => x.id === id)?.metadata,
  });

  test("behavior: POST /v1/pay keeps metadata and shows it in the answer, the replay, the list and by id", async () => {
    const metadata = { order_id: "ord_1", note: "x".repeat(500), k: "" };
    const first = await call("POST", "/v1/pay", { recipient: address, amount_usd: 1, metadata }, { "idempotency-key": "meta-usdc-1" });
    expect(first.status, JSON.stringify(first.json)).toBe(201);
    expect(PayResponse.parse(first.json).metadata).toEqual(metadata);
    // The same key in the body: the original payment, not a second one.
    const again = await call("POST", "/v1/pay", { recipient: address, amount_usd: 1, metadata: { other: "ignored" }, idempotency_key: "meta-usdc-1" });
    expect(again.status).toBe(200);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(again.json).toMatchObject({ id: first.json.id, metadata });
    expect(await shown(first.json.id)).toEqual({ byId: metadata, inList: metadata });
    expect(await w.settle(first.json.id)).toBe("completed");
  });

  test("behavior: an x402 payment through POST /v1/pay and the deprecated endpoint keeps its metadata", async () => {
    const metadata = { run: "42" };
    const paid = await call("POST", "/v1/pay", { recipient: `${merchant.url}/paid`, max_amount_usdc: 10_000, metadata });
    expect(paid.status, JSON.stringify(paid.json)).toBe(200);
    expect(PayResponse.parse(paid.json)).toMatchObject({ rail: "x402", metadata });
    expect(await shown(paid.json.id)).toEqual({ byId: metadata, inList: metadata });

    const legacy = await call("POST", "/v1/x402/pay", { url: `${merchant.url}/paid`, max_amount_usdc: 10_000, metadata: { legacy: "yes" } }, { "idempotency-key": "meta-x402-legacy" });
    expect(legacy.status, JSON.stringify(legacy.json)).toBe(200);
    expect(X402PayResponse.parse(legacy.json)).toMatchObject({ payment_amount: 10_000, metadata: { legacy: "yes" } });
    // The header makes the deprecated endpoint idempotent: the replay is the same payment, nothing paid again.
    const replay = await call("POST", "/v1/x402/pay", { url: `${merchant.url}/paid`, max_amount_usdc: 10_000 }, { "idempotency-key": "meta-x402-legacy" });
    expect(replay.status).toBe(200);
    expect(replay.headers.get("idempotent-replayed")).toBe("true");
    expect(replay.json).toEqual(legacy.json);
    await w.settle(paid.json.id);
  });

  test("behavior: the deprecated bank and USDC endpoints keep metadata, take the header key, and say they are deprecated", async () => {
    const ach = await call("POST", "/v1/payments", { amount: 150, recipient: bank, metadata: { invoice: "INV-9" } }, { "idempotency-key": "meta-ach-1" });
    expect(ach.status, JSON.stringify(ach.json)).toBe(201);
    expect(LegacyPaymentResponse.parse(ach.json).metadata).toEqual({ invoice: "INV-9" });
    const achAgain = await call("POST", "/v1/payments", { amount: 150, recipient: bank, idempotency_key: "meta-ach-1" });
    expect(achAgain.status).toBe(200);
    expect(achAgain.json.id).toBe(ach.json.id);
    const usdc = await call("POST", "/v1/usdc/transfer", { amount_usdc: 0.5, to_address: address, metadata: { batch: "b1" } });
    expect(usdc.status, JSON.stringify(usdc.json)).toBe(201);
    expect(UsdcTransferResponse.parse(usdc.json).metadata).toEqual({ batch: "b1" });
    expect(await shown(usdc.json.id)).toEqual({ byId: { batch: "b1" }, inList: { batch: "b1" } });
    // Without metadata the deprecated answers keep exactly their old shape.
    const plain = await call("POST", "/v1/usdc/transfer", { amount_usdc: 0.5, to_address: address });
    expect(Object.keys(plain.json).sort()).toEqual(["amount_usdc", "chain", "created_at", "fee_usdc", "id", "status", "to_address", "tx_hash"]);

    for (const r of [ach, achAgain, usdc]) {
      expect(r.headers.get("deprecation")).toMatch(/^@\d+$/);
      expect(r.headers.get("link")).toMatch(/^<[^>]*\/v1\/pay>; rel="successor-version"$/);
    }
    // Errors of a deprecated endpoint carry them too; the successor does not.
    const refused = await fetch(`${w.server.baseUrl}/v1/x402/pay`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(refused.status).toBe(401);
    expect(refused.headers.get("deprecation")).toMatch(/^@\d+$/);
    const current = await call("POST", "/v1/pay", { recipient: address, amount_usd: 0.01 });
    expect(current.headers.get("deprecation")).toBeNull();
    expect(current.headers.get("link")).toBeNull();
    for (const id of [ach.json.id, usdc.json.id, plain.json.id, current.json.id]) await w.settle(id);
  });

  test.each([
    ["21 keys", Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, "v"])), /metadata must have at most 20 keys/],
    ["a key of 41 characters", { ["k".repeat(41)]: "v" }, /metadata.*at most 40 characters/],
    ["an empty key", { "": "v" }, /metadata.*at least 1 character/],
    ["a value of 501 characters", { k: "v".repeat(501) }, /metadata\.k must be at most 500 characters/],
    ["a number value", { k: 1 }, /metadata\.k must be a string/],
    ["an array", ["a"], /metadata must be an object/],
  ])("error: metadata with %s → 400 naming the rule", async (_name, metadata, detail) => {
    for (const [path, body] of [
      ["/v1/pay", { recipient: address, amount_usd: 1, metadata }],
      ["/v1/payments", { amount: 100, recipient: bank, metadata }],
      ["/v1/usdc/transfer", { amount_usdc: 1, to_address: address, metadata }],
      ["/v1/x402/pay", { url: `${merchant.url}/paid`, max_amount_usdc: 10_000, metadata }],
    ] as const) {
      const res = await call("POST", path, body);
      expect(res.status, `${path}: ${JSON.stringify(res.json)}`).toBe(400);
      expect(ErrorBody.parse(res.json).detail, path).toMatch(detail);
    }
  });

  test.each([
    ["different keys in the header and the body", { "idempotency-key": "one" }, { idempotency_key: "two" }, /header and the body's idempotency_key differ/],
    ["a malformed header key", { "idempotency-key": "has space" }, {}, /Idempotency-Key header must be 1 to 255 characters/],
  ])("error: %s → 400", async (_name, headers, extra, detail) => {
    const res = await call("POST", "/v1/pay", { recipient: address, amount_usd: 1, ...extra }, headers);
    expect(res.status).toBe(400);
    expect(ErrorBody.parse(res.json)).toMatchObject({ code: "invalid_request", detail: expect.stringMatching(detail) });
  });

  test("behavior: the same key in the header and the body is one key", async () => {
    const res = await call("POST", "/v1/pay", { recipient: address, amount_usd: 0.02, idempotency_key: "same-both" }, { "idempotency-key": "same-both" });
    expect(res.status).toBe(201);
    const again = await call("POST", "/v1/pay", { recipient: address, amount_usd: 0.02 }, { "idempotency-key": "same-both" });
    expect(again.status).toBe(200);
    expect(again.json.id).toBe(res.json.id);
    await w.settle(res.json.id);
  });
});
