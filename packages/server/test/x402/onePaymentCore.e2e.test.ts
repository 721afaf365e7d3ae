// One payment core: x402, USDC and bank payments, from every endpoint (the deprecated ones included),
// are accepted by the same createPayment and held by the one hold (Ledger.hold, called only from
// services/payments/hold.ts), and their idempotency keys live in one store: a payment row owns its key,
// a free reply is kept in idempotency_keys, and nothing is left in kv.
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { NewPayment } from "../../src/ledger/payments.ts";
import { type X402World, startX402World } from "./support/x402World.ts";
import { kvRows, paymentRows, tableRows } from "../../src/ledger/testing.ts";

const PRICE = 10_000n;
const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const bank = { name: "Payee", account_number: "12345678", routing_number: "021000021" };

describe.each(["sqlite", "postgres"] as const)("on %s", (database) => {
  let w: X402World;
  let merchantUrl: string;
  const holds: { rail: string; stack: string }[] = [];
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 50_000_000n });
    merchantUrl = (await w.startMerchant(2, PRICE)).url;
    // Counts every hold, with where it was called from; the hold itself runs as it is.
    const ledger = w.ctx.ledger;
    const real = ledger.payments.hold.bind(ledger.payments);
    ledger.payments.hold = (input: NewPayment) => {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 50;
      holds.push({ rail: input.rail, stack: new Error().stack ?? "" });
      Error.stackTraceLimit = limit;
      return real(input);
    };
  });
  afterAll(async () => w?.stop());

  const send = async (path: string, body: unknown, key: string) => {
    const res = await fetch(`${w.server.baseUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${w.server.token}`, "content-type": "application/json", "idempotency-key": key },
      body: JSON.stringify(body),
    });
    return { status: res.status, replayed: res.headers.get("idempotent-replayed") === "true", body: (await res.json()) as Record<string, unknown> };
  };

  test("behavior: every rail and endpoint goes through createPayment and the one hold; one idempotency store", async () => {
    const requests = [
      { path: "/v1/pay", body: { recipient: `${merchantUrl}/paid`, max_amount_usdc: Number(PRICE) }, key: "x402-pay", rail: "x402", status: 200 },
      { path: "/v1/x402/pay", body: { url: `${merchantUrl}/paid`, max_amount_usdc: Number(PRICE) }, key: "x402-legacy", rail: "x402", status: 200 },
      { path: "/v1/pay", body: { recipient, amount_usd: 1.5 }, key: "usdc-pay", rail: "usdc_transfer", status: 201 },
      { path: "/v1/usdc/transfer", body: { to_address: recipient, amount_usdc: 1.25 }, key: "usdc-legacy", rail: "usdc_transfer", status: 201 },
      { path: "/v1/pay", body: { recipient: bank, amount_usd: 2 }, key: "fiat-pay", rail: "fiat", status: 201 },
      { path: "/v1/payments", body: { recipient: bank, amount: 300 }, key: "fiat-legacy", rail: "fiat", status: 201 },
    ];
    const free = { path: "/v1/pay", body: { recipient: `${merchantUrl}/free` }, key: "x402-free" };

    const first = [];
    for (const r of requests) {
      const answer = await send(r.path, r.body, r.key);
      expect(answer, r.key).toMatchObject({ status: r.status, replayed: false });
      first.push(answer);
    }
    const freeAnswer = await send(free.path, free.body, free.key);
    expect(freeAnswer).toMatchObject({ status: 200, replayed: false, body: { status: "completed", amount_charged: 0 } });

    // One hold per payment, each called by the one hold function on behalf of createPayment.
    expect(holds.map((h) => h.rail)).toEqual(requests.map((r) => r.rail));
    for (const h of holds) {
      expect(h.stack).toMatch(/holdPayment \(.*services\/payments\/hold\.ts/);
      expect(h.stack).toMatch(/createPayment \(.*services\/payments\/createPayment\.ts/);
    }

    // Each payment row owns its key; the free reply is the only key kept beside them; kv keeps none.
    for (const r of requests) {
      const rows = await paymentRows(w.ctx.ledger, { idempotencyKey: r.key });
      expect(rows.map((p) => ({ rail: p.rail, idempotency_key: p.idempotency_key })), r.key).toEqual([{ rail: r.rail, idempotency_key: r.key }]);
    }
    const kept = await tableRows(w.ctx.ledger, "idempotency_keys");
    expect(kept.map((k) => ({ key: k.key, state: k.state }))).toEqual([{ key: "x402-free", state: "reply" }]);
    expect((await kvRows(w.ctx.ledger)).filter((r) => r.key.includes("idempotency"))).toEqual([]);

    // Every repeat is answered from that store: the same payment (or reply), nothing held again.
    for (const [i, r] of requests.entries()) {
      const again = await send(r.path, r.body, r.key);
      expect(again, r.key).toMatchObject({ status: 200, replayed: true });
      if (r.path === "/v1/x402/pay") expect(again.body.payment_amount).toBe(first[i]!.body.payment_amount);
      else expect(again.body.id).toBe(first[i]!.body.id);
    }
    expect(await send(free.path, free.body, free.key)).toEqual({ ...freeAnswer, replayed: true });
    expect(holds).toHaveLength(requests.length);
  });

  test("behavior: a key sent to another endpoint is answered in that endpoint's units, or refused with 409 idempotency_key_reused when that endpoint cannot show the payment's rail", async () => {
    // One payment of each rail: 1 USDC on /v1/pay, $3.00 (300 cents) on /v1/payments, the merchant's price on /v1/x402/pay.
    const made = {
      usdc_transfer: await send("/v1/pay", { recipient, amount_usd: 1 }, "cross-usdc"),
      fiat: await send("/v1/payments", { recipient: bank, amount: 300 }, "cross-fiat"),
      x402: await send("/v1/x402/pay", { url: `${merchantUrl}/paid`, max_amount_usdc: Number(PRICE) }, "cross-x402"),
    };
    expect([made.usdc_transfer.status, made.fiat.status, made.x402.status]).toEqual([201, 201, 200]);
    const keys = { usdc_transfer: "cross-usdc", fiat: "cross-fiat", x402: "cross-x402" } as const;
    const endpoints = {
      "/v1/pay": { body: { recipient, amount_usd: 5 }, rail: null },
      "/v1/payments": { body: { recipient: bank, amount: 700 }, rail: "fiat" },
      "/v1/usdc/transfer": { body: { to_address: recipient, amount_usdc: 5 }, rail: "usdc_transfer" },
      "/v1/x402/pay": { body: { url: `${merchantUrl}/paid`, max_amount_usdc: Number(PRICE) }, rail: "x402" },
    } as const;
    // The original payment as each endpoint states it, in its own units.
    const shown: Record<string, Record<string, Record<string, unknown>>> = {
      "/v1/pay": {
        usdc_transfer: { rail: "usdc_transfer", amount_charged: 1_000_000, currency: "usdc" },
        fiat: { rail: "fiat", amount_charged: 300, currency: "usd" },
        x402: { rail: "x402", amount_charged: Number(PRICE), currency: "usdc" },
      },
      "/v1/payments": { fiat: { amount: 300, recipient_name: "Payee" } },
      "/v1/usdc/transfer": { usdc_transfer: { amount_usdc: 1, to_address: recipient } },
      "/v1/x402/pay": { x402: { payment_amount: Number(PRICE) } },
    };
    const heldBefore = holds.length;
    for (const [path, e] of Object.entries(endpoints)) {
      for (const rail of ["usdc_transfer", "fiat", "x402"] as const) {
        const answer = await send(path, e.body, keys[rail]);
        if (e.rail === null || e.rail === rail) {
          expect(answer, `${rail} → ${path}`).toMatchObject({ status: 200, replayed: true, body: shown[path]![rail] });
        } else {
          expect(answer, `${rail} → ${path}`).toMatchObject({ status: 409, replayed: false, body: { code: "idempotency_key_reused" } });
          expect(answer.body.detail).toContain(keys[rail]);
        }
      }
    }
    expect(holds).toHaveLength(heldBefore);
  });
});
