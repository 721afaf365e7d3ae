// Quote before pay against real `@x402/express` merchants settling through x402's own facilitator on anvil:
// the quote's price is what pay charges; a merchant that raises its price between quote and pay gets 409
// quote_changed with nothing signed or held; a quote the controls refuse says so and pay with it is
// refused the same way; a host not allowed is never contacted by either. Signed offers (x402's
// offer-and-receipt extension) are reported with their verification. On SQLite and PostgreSQL.
import { startMerchantV2 } from "@agentwallet/devchain";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { countingListener } from "../support/net.ts";
import { feeFor } from "../../src/money.ts";
import { issueToken } from "../../src/services/tokens.ts";
import { type X402World, randomAddress, startX402World } from "./support/x402World.ts";
import { setQuoteExpiry } from "../../src/ledger/testing.ts";

const PRICE = 10_000;

describe.each(["sqlite", "postgres"] as const)("POST /v1/quote then POST /v1/pay (%s)", (database) => {
  let w: X402World;
  let listener: Awaited<ReturnType<typeof countingListener>>;
  const started: { stop(): Promise<void> }[] = [];
  const merchant = async (o: { offerSignerKey?: `0x${string}`; payTo?: `0x${string}` } = {}) => {
    const payTo = o.payTo ?? randomAddress();
    const m = await startMerchantV2({ facilitatorUrl: w.facilitator.url, payTo, usdcAddress: w.usdc, priceMicros: BigInt(PRICE), offerSignerKey: o.offerSignerKey });
    started.push(m);
    return { ...m, payTo };
  };
  const state = async () => ({ available: (await w.get("/v1/balance")).body.available as number, count: (await w.get("/v1/transactions?limit=1")).body.total_count as number, signatures: w.signatures.count() });
  const tokenWith = async (controls: Parameters<typeof issueToken>[1]["controls"]) =>
    (await issueToken(w.ctx, { projectId: w.server.projectId, permissions: ["read", "pay", "x402"], mode: "test", controls })).token;

  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 2_000_000n });
    listener = await countingListener();
  });
  afterAll(async () => {
    await Promise.all(started.map((m) => m.stop()));
    await listener?.close();
    await w?.stop();
  });

  test("behavior: the quote signs and holds nothing, and pay with its id charges exactly the quoted price and fee", async () => {
    const m = await merchant();
    const before = await state();
    const quote = await w.post("/v1/quote", { recipient: `${m.url}/paid` });
    expect(quote.status, JSON.stringify(quote.body)).toBe(200);
    const fee = feeFor(PRICE, "free");
    expect(quote.body).toMatchObject({
      payment_required: true,
      protocol: "x402",
      amount_usdc: PRICE,
      amount_usd: 0.01,
      fee_usdc: fee,
      requirement: { scheme: "exact", network: "eip155:8453", asset: w.usdc, pay_to: m.payTo },
      offer: null,
      controls: { verdict: "would_pay", code: null, windows: [] },
      balance_sufficient: true,
      response: null,
    });
    expect(quote.body.quote_id).toMatch(/^quo_/);
    expect(Date.parse(String(quote.body.expires_at)) - Date.now()).toBeGreaterThan(200_000);
    expect(await state()).toEqual(before);

    const paid = await w.post("/v1/pay", { recipient: `${m.url}/paid`, quote_id: quote.body.quote_id });
    expect(paid.status, JSON.stringify(paid.body)).toBe(200);
    expect(paid.body).toMatchObject({ amount_charged: quote.body.amount_usdc, fee: quote.body.fee_usdc });
    expect(paid.body.approval).toBeUndefined();
    expect(await w.settle(String(paid.body.id))).toBe("completed");
    expect(await w.balanceOf(m.payTo)).toBe(BigInt(PRICE));
  });

  test("error: the merchant raises its price after the quote → 409 quote_changed with both terms, nothing signed, nothing held", async () => {
    const m = await merchant();
    const quote = await w.post("/v1/quote", { recipient: `${m.url}/paid` });
    m.setPrice(BigInt(PRICE * 2));
    const before = await state();
    const paid = await w.post("/v1/pay", { recipient: `${m.url}/paid`, quote_id: quote.body.quote_id, max_amount_usdc: 1_000_000 });
    expect([paid.status, paid.body.code]).toEqual([409, "quote_changed"]);
    expect(paid.body).toMatchObject({ quoted: { amount_usdc: PRICE, pay_to: m.payTo }, current: { amount_usdc: PRICE * 2, pay_to: m.payTo } });
    expect(paid.body.detail).toContain("the price is 0.020000 USDC, quoted 0.010000 USDC");
    expect(await state()).toEqual(before);
    expect(await w.balanceOf(m.payTo)).toBe(0n);
    // Without a quote nothing changes: the new price is paid.
    const plain = await w.post("/v1/pay", { recipient: `${m.url}/paid` });
    expect([plain.status, plain.body.amount_charged]).toEqual([200, PRICE * 2]);
  });

  test("error: a quote of another request, an unknown one or an expired one is refused, nothing signed or held", async () => {
    const m = await merchant();
    const quote = await w.post("/v1/quote", { recipient: `${m.url}/paid` });
    const post = await w.post("/v1/pay", { recipient: `${m.url}/paid`, method: "POST", body: "x", quote_id: quote.body.quote_id });
    expect([post.status, post.body.code]).toEqual([400, "quote_mismatch"]);
    expect(post.body.detail).toContain("method, body differ");
    const unknown = await w.post("/v1/pay", { recipient: `${m.url}/paid`, quote_id: "quo_unknown" });
    expect([unknown.status, unknown.body.code]).toEqual([404, "quote_not_found"]);
    await setQuoteExpiry(w.ctx.ledger, String(quote.body.quote_id), "2020-01-01T00:05:00.000Z");
    const before = await state();
    const expired = await w.post("/v1/pay", { recipient: `${m.url}/paid`, quote_id: quote.body.quote_id });
    expect([expired.status, expired.body.code]).toEqual([409, "quote_expired"]);
    expect(await state()).toEqual(before);
  });

  test("behavior: a quote the controls refuse says so with the rule, and pay with it is refused the same way, unsigned", async () => {
    const m = await merchant();
    const token = await tokenWith({ spending_limits: [{ amount_usd: 0.005, interval: "per_payment" }, { amount_usd: 1, interval: "daily" }] });
    const quote = await w.post("/v1/quote", { recipient: `${m.url}/paid` }, token);
    expect(quote.status, JSON.stringify(quote.body)).toBe(200);
    const controls = quote.body.controls as { verdict: string; code: string; detail: string; windows: unknown[] };
    expect(controls).toMatchObject({ verdict: "refused", code: "spending_limit_exceeded" });
    expect(controls.detail).toContain("per_payment limit is 0.005000 USD and this payment is 0.010000 USD");
    expect(controls.windows).toEqual([expect.objectContaining({ scope: "token", interval: "daily", limit_usd: 1, spent_usd: 0, remaining_usd: 1 })]);
    const before = await state();
    const paid = await w.post("/v1/pay", { recipient: `${m.url}/paid`, quote_id: quote.body.quote_id }, token);
    expect([paid.status, paid.body.code, paid.body.detail]).toEqual([403, "spending_limit_exceeded", controls.detail]);
    expect(await state()).toEqual(before);

    // A window nearly spent: the verdict names it and what remains.
    const windowed = await tokenWith({ spending_limits: [{ amount_usd: 0.015, interval: "daily" }] });
    expect((await w.post("/v1/pay", { recipient: `${m.url}/paid` }, windowed)).status).toBe(200);
    const second = await w.post("/v1/quote", { recipient: `${m.url}/paid` }, windowed);
    expect(second.body.controls).toMatchObject({ verdict: "refused", code: "spending_limit_exceeded", windows: [expect.objectContaining({ spent_usd: 0.01, remaining_usd: 0.005 })] });
    const refused = await w.post("/v1/pay", { recipient: `${m.url}/paid`, quote_id: second.body.quote_id }, windowed);
    expect([refused.status, refused.body.code]).toEqual([403, "spending_limit_exceeded"]);
  });

  test("error: a host the token may not pay is contacted neither by the quote nor by pay", async () => {
    const token = await tokenWith({ allowed_recipients: ["api.example.com"] });
    const quote = await w.post("/v1/quote", { recipient: `${listener.url}/paid` }, token);
    expect([quote.status, quote.body.code]).toEqual([403, "recipient_not_allowed"]);
    const paid = await w.post("/v1/pay", { recipient: `${listener.url}/paid`, quote_id: "quo_whatever" }, token);
    expect([paid.status, paid.body.code]).toEqual([403, "recipient_not_allowed"]);
    expect(listener.accepted()).toBe(0);
  });

  test("behavior: a signed offer from the payTo's key is verified; one signed by another key is reported invalid", async () => {
    const key = generatePrivateKey();
    const signed = await merchant({ offerSignerKey: key, payTo: privateKeyToAccount(key).address });
    const good = await w.post("/v1/quote", { recipient: `${signed.url}/paid` });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body.offer).toMatchObject({ format: "eip712", verification: "verified", signer: signed.payTo, payload: { payTo: signed.payTo, amount: String(PRICE) } });

    const other = await merchant({ offerSignerKey: generatePrivateKey() });
    const bad = await w.post("/v1/quote", { recipient: `${other.url}/paid` });
    expect(bad.body.offer).toMatchObject({ format: "eip712", verification: "invalid" });
    expect((bad.body.offer as { reason: string }).reason).toContain("is not the offer's payTo");
  });

  test("behavior: an x402 v1 merchant and an MPP merchant are quotable too; a free URL answers its reply and no quote", async () => {
    const v1 = await w.startMerchant(1, 25_000n);
    expect((await w.post("/v1/quote", { recipient: `${v1.url}/paid` })).body).toMatchObject({ protocol: "x402", amount_usdc: 25_000, requirement: { pay_to: v1.payTo, network: "eip155:8453" } });
    const mpp = await w.startMppMerchant(30_000n);
    const q = await w.post("/v1/quote", { recipient: `${mpp.url}/paid` });
    expect(q.status, JSON.stringify(q.body)).toBe(200);
    expect(q.body).toMatchObject({ protocol: "mpp", amount_usdc: 30_000, requirement: { scheme: "evm/charge", pay_to: mpp.payTo } });
    const free = await w.post("/v1/quote", { recipient: `${v1.url}/free` });
    expect(free.body).toMatchObject({ payment_required: false, quote_id: null, amount_usdc: null, response: { status_code: 200 } });
  });
});
