// An x402 payment with an idempotency key claims the key before it asks the target its price, and gives the claim up
// once the held payment's row owns the key. That last write is not on the payment's path: the paid request goes to
// the merchant while it runs. Here the release is held back until the merchant has been paid (bounded): the payment
// still goes through, the claim is gone by the answer, and a repeat of the key answers the same payment.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { IdempotencyKeys } from "../../src/ledger/idempotencyKeys.ts";
import { tableRows } from "../../src/ledger/testing.ts";
import { type X402World, startX402World } from "./support/x402World.ts";

const PRICE = 10_000n;
/** How long the release is held back at most, waiting for the merchant to be paid. */
const GATE_MAX_MS = 5_000;

describe.each(["sqlite", "postgres"] as const)("%s: an idempotency key's claim is given up beside the paid request", (database) => {
  let w: X402World;
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 1_000_000n });
  });
  afterAll(async () => {
    await w?.stop();
  });

  test("behavior: the merchant is paid while the release of the claim waits; the answer comes after it, and a repeat gets the payment", async () => {
    const merchant = await w.startMerchant(2, PRICE);
    const keys: IdempotencyKeys = w.ctx.ledger.idempotencyKeys;
    const release = keys.release.bind(keys);
    const gate: { openedBy?: "merchant paid" | "time" } = {};
    keys.release = async (...args) => {
      const until = Date.now() + GATE_MAX_MS;
      while (Date.now() < until && (await w.balanceOf(merchant.payTo)) < PRICE) await new Promise((r) => setTimeout(r, 20));
      gate.openedBy = (await w.balanceOf(merchant.payTo)) >= PRICE ? "merchant paid" : "time";
      return release(...args);
    };
    try {
      const key = `k-${randomBytes(6).toString("hex")}`;
      const answer = await w.post("/v1/pay", { recipient: `${merchant.url}/paid`, max_amount_usdc: Number(PRICE), idempotency_key: key });
      expect(answer.status).toBe(200);
      expect(gate.openedBy).toBe("merchant paid");
      expect((answer.body.response as { status_code: number }).status_code).toBe(200);
      expect((await tableRows(w.ctx.ledger, "idempotency_keys")).filter((r) => r.key === key)).toEqual([]);
      const repeat = await w.post("/v1/pay", { recipient: `${merchant.url}/paid`, max_amount_usdc: Number(PRICE), idempotency_key: key });
      expect(repeat.status).toBe(200);
      expect(repeat.body.id).toBe(answer.body.id);
      expect(await w.settle(answer.body.id as string)).toBe("completed");
      expect(await w.balanceOf(merchant.payTo)).toBe(PRICE);
    } finally {
      keys.release = release;
    }
  });
});
