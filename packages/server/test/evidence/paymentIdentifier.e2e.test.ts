// Exactly once towards the merchant (x402's payment-identifier, "recovering a lost response"): a real
// @x402/express merchant that declares the extension settles the first paid request and then closes the
// connection without answering. The service sends the identical payload again, the merchant recognises
// its identifier and answers what it settled: one settlement on the real chain, one payment, and the
// payload it received twice byte for byte the one stored with the payment — on both databases.
import { decodePaymentSignatureHeader } from "@x402/core/http";
import { extractPaymentIdentifier } from "@x402/extensions/payment-identifier";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { dbOf } from "../../src/ledger/connection.ts";
import { recordsOf, verifyEvidence } from "../../src/services/evidence/verifyEvidence.ts";
import { dialects } from "../support/db.ts";
import { type X402World, startX402World } from "../x402/support/x402World.ts";

const PRICE = 10_000n;

describe.each(dialects)("payment-identifier: a merchant that settles and drops its reply (%s)", (database) => {
  let w: X402World;
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 5_000_000n });
  });
  afterAll(async () => {
    await w?.stop();
  });

  test("the identical payload is sent again: one settlement on chain, one payment, the same bytes twice", async () => {
    const merchant = await w.startMerchantV2({ priceMicros: PRICE, paymentIdentifier: { dropFirstReply: true } });
    const recipient = `${merchant.url}/paid`;
    const signaturesBefore = w.signatures.count();

    const paid = await w.post("/v1/pay", { recipient, idempotency_key: "pi-dropped-reply" });
    expect(paid.status).toBe(200);
    // Settled by the merchant's answer to the payload sent again (its transaction proven on chain).
    expect(paid.body).toMatchObject({ status: "processing", tx_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(paid.body.response).toMatchObject({ status_code: 200, body: JSON.stringify({ paid: true }) });

    // The merchant got the payload twice, byte for byte, carrying the identifier derived from the key.
    expect(merchant.paymentHeaders).toHaveLength(2);
    expect(merchant.paymentHeaders[1]).toBe(merchant.paymentHeaders[0]);
    const id = extractPaymentIdentifier(decodePaymentSignatureHeader(merchant.paymentHeaders[0]!));
    expect(id).toMatch(/^pay_[0-9a-f]{40}$/);
    // One signature for the merchant (the fee sweep signs its own when the payment completes).
    expect(w.signatures.count() - signaturesBefore).toBeLessThanOrEqual(2);

    expect(await w.settle(paid.body.id as string, 60_000)).toBe("completed");
    // One settlement: the merchant's fresh payTo holds the price once.
    expect(await w.balanceOf(merchant.payTo)).toBe(PRICE);
    const payments = await dbOf(w.ctx.ledger).selectFrom("payments").select(["id", "tx_hash"]).where("recipient", "=", recipient).execute();
    expect(payments).toHaveLength(1);

    // The payload stored before it left is what the merchant received; the evidence says so and verifies.
    const records = (await w.get(`/v1/transactions/${paid.body.id}/evidence`)).body.records as { body: string }[];
    const states = records.map((r) => JSON.parse(r.body).rail_state).filter(Boolean);
    const settled = states.find((s) => s.stage === "settled");
    expect(settled).toMatchObject({ paymentIdentifier: id, sent: { name: "PAYMENT-SIGNATURE", value: merchant.paymentHeaders[0] }, settlement: { source: "receipt" } });
    expect(states.filter((s) => s.sent).every((s) => s.sent.value === merchant.paymentHeaders[0])).toBe(true);
    const chain = w.server.server.chain!.client;
    const report = await verifyEvidence(recordsOf(w.ctx.ledger.evidence, w.server.projectId), { domain: { chainId: chain.settings.chainId, usdc: chain.usdcAddress }, receipt: (h) => chain.receipt(h) as never });
    expect(report.problems).toEqual([]);

    // The same request again (same idempotency key): the same payment, nothing sent to the merchant.
    const again = await w.post("/v1/pay", { recipient, idempotency_key: "pi-dropped-reply" });
    expect(again.body.id).toBe(paid.body.id);
    expect(merchant.paymentHeaders).toHaveLength(2);
    expect(await w.balanceOf(merchant.payTo)).toBe(PRICE);
  });
});
