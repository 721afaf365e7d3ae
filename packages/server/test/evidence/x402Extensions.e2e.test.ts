// x402's extensions in the evidence, against real @x402/express merchants on the real chain, on both databases.
// Exactly once towards the merchant (payment-identifier, "recovering a lost response"): a merchant that
// declares the extension settles the first paid request and closes the connection without answering; the
// service sends the identical payload again and the merchant answers what it settled: one settlement on
// chain, one payment, the payload received twice byte for byte the one stored with the payment.
// Receipts (offer-and-receipt, EIP-712): a receipt signed by the resource's payTo key verifies; one signed by
// the merchant's own key that is not the payTo is reported as not authorised; a receipt whose signature was
// altered is reported as such even when the whole chain after it was re-hashed to hide the edit.
// JWS offers and receipts (ES256K, the key in a did:jwk kid): the payTo's key verifies, in the quote and in the
// evidence; another key is reported as not authorised, and a JWS whose payload was changed as not holding.
import { decodePaymentRequiredHeader, decodePaymentSignatureHeader } from "@x402/core/http";
import { extractPaymentIdentifier } from "@x402/extensions/payment-identifier";
import type { Hex } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { receiptOf } from "../../src/services/evidence/checkSignatures.ts";
import { readOffer } from "../../src/rails/x402/readOffer.ts";
import { type EvidenceRecord, recordsOf, verifyEvidence } from "../../src/services/evidence/verifyEvidence.ts";
import { dialects } from "../support/db.ts";
import { iterate, rechained } from "./support/rechain.ts";
import { type X402World, startX402World } from "../x402/support/x402World.ts";
import { paymentRows } from "../../src/ledger/testing.ts";

const PRICE = 10_000n;

type Body = { rail_state?: { settlement?: { response?: string } } | null };
const decode = (b64: string) => JSON.parse(Buffer.from(b64, "base64").toString("utf8")) as Record<string, unknown>;
const encode = (v: unknown) => Buffer.from(JSON.stringify(v), "utf8").toString("base64");

/** The merchant's receipt a record carries in its settlement response, if any. */
const receiptIn = (r: EvidenceRecord) => {
  const response = (JSON.parse(r.body) as Body).rail_state?.settlement?.response;
  return response ? receiptOf(decode(response)) : undefined;
};

/** The records with the receipt whose signature is `signature` replaced by `change(signature)`, the chain re-hashed. */
const withReceiptChanged = (records: EvidenceRecord[], signature: string, change: (signature: string) => string) =>
  rechained<Body>(records, (body) => {
    const response = body.rail_state?.settlement?.response;
    const settle = response ? decode(response) : undefined;
    const receipt = settle ? receiptOf(settle) : undefined;
    if (!settle || !receipt || receipt.signature !== signature) return undefined;
    const extensions = settle.extensions as Record<string, { info: { receipt: { signature: string } } }>;
    extensions["offer-receipt"]!.info.receipt.signature = change(receipt.signature);
    return { ...body, rail_state: { ...body.rail_state, settlement: { ...body.rail_state!.settlement, response: encode(settle) } } };
  });

/**
 * Pays the genuine merchant and the stranger (under keys `<prefix>-genuine`, `<prefix>-stranger`) until both
 * complete; then the project's records, and the options that check them against the chain.
 */
async function payBoth(w: X402World, genuine: { url: string }, stranger: { url: string }, prefix: string) {
  const good = await w.post("/v1/pay", { recipient: `${genuine.url}/paid`, idempotency_key: `${prefix}-genuine` });
  const bad = await w.post("/v1/pay", { recipient: `${stranger.url}/paid`, idempotency_key: `${prefix}-stranger` });
  for (const p of [good, bad]) {
    expect(p.status).toBe(200);
    expect(await w.settle(p.body.id as string, 60_000)).toBe("completed");
  }
  const chain = w.server.server.chain!.client;
  const options = { domain: { chainId: chain.settings.chainId, usdc: chain.usdcAddress }, receipt: (h: Hex) => chain.receipt(h) as never };
  const records: EvidenceRecord[] = [];
  for await (const r of recordsOf(w.ctx.ledger.evidence, w.server.projectId)) records.push(r);
  return { goodId: good.body.id as string, badId: bad.body.id as string, records, options };
}

/** The JWS with its payload's `field` set to `value` and the signature left as it was. */
const reworded = (jws: string, field: string, value: unknown) => {
  const [h, p, sig] = jws.split(".") as [string, string, string];
  const payload = { ...JSON.parse(Buffer.from(p, "base64url").toString("utf8")), [field]: value };
  return `${h}.${Buffer.from(JSON.stringify(payload)).toString("base64url")}.${sig}`;
};

describe.each(dialects)("x402 extensions in the evidence (%s)", (database) => {
  let w: X402World;
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 5_000_000n });
  });
  afterAll(async () => {
    await w?.stop();
  });

  test("payment-identifier: a merchant settles and drops its reply; the identical payload is sent again: one settlement on chain, one payment, the same bytes twice", async () => {
    const merchant = await w.startMerchantV2({ priceMicros: PRICE, paymentIdentifier: { dropFirstReply: true } });
    const recipient = `${merchant.url}/paid`;
    const signaturesBefore = w.signatures.count();

    const paid = await w.post("/v1/pay", { recipient, idempotency_key: "pi-dropped-reply" });
    expect(paid.status).toBe(200);
    // Settled by the merchant's answer to the payload sent again; its transaction is proven on chain right after the
    // answer (the evidence's settled stage below says by the receipt).
    expect(paid.body).toMatchObject({ status: "processing", tx_hash: null });
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
    const payments = await paymentRows(w.ctx.ledger, { recipient });
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

  test("payment-identifier: the merchant is down for every send of the request; the worker sends the identical payload again: one settlement, one payment, the same bytes each time", async () => {
    // The paid retry and the request's own resends (x402Rail.ts) all reach a merchant whose handler is down.
    const merchant = await w.startMerchantV2({ priceMicros: PRICE, paymentIdentifier: { closeFirst: 3 } });
    const recipient = `${merchant.url}/paid`;
    const paid = await w.post("/v1/pay", { recipient, idempotency_key: "pi-worker-resend" });
    expect(paid.status).toBe(200);
    expect(paid.body).toMatchObject({ status: "processing", tx_hash: null, response: null });
    // The request's three sends; the worker's pass may already have sent the fourth (its count is checked below).
    expect(merchant.paymentHeaders.length).toBeGreaterThanOrEqual(3);

    // The worker finds the authorization unused and valid, sends the stored payload again, and the merchant settles it.
    expect(await w.settle(paid.body.id as string, 60_000)).toBe("completed");
    expect(merchant.paymentHeaders).toHaveLength(4);
    expect(new Set(merchant.paymentHeaders).size).toBe(1);
    expect(await w.balanceOf(merchant.payTo)).toBe(PRICE);
    expect(await paymentRows(w.ctx.ledger, { recipient })).toHaveLength(1);

    // What came back is recorded: the merchant's answer, its settlement proven by receipt, and the count of sends.
    const payment = (await w.ctx.ledger.payments.getPayment(paid.body.id as string))!;
    expect(payment).toMatchObject({ status: "completed", txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(JSON.parse(payment.responseJson!)).toMatchObject({ status_code: 200, body: JSON.stringify({ paid: true }) });
    const records = (await w.get(`/v1/transactions/${paid.body.id}/evidence`)).body.records as { body: string }[];
    const settled = records.map((r) => JSON.parse(r.body).rail_state).find((s) => s?.stage === "settled");
    expect(settled).toMatchObject({ sent: { value: merchant.paymentHeaders[0] }, method: "GET", workerResends: { count: 1, lastStatus: 200 }, settlement: { source: "receipt" } });
  });

  test("receipts: a genuine receipt verifies; an altered one and one by a key not the payTo's are named", async () => {
    const payToKey = generatePrivateKey();
    const genuine = await w.startMerchantV2({ priceMicros: PRICE, offerSignerKey: payToKey, payTo: privateKeyToAccount(payToKey).address });
    const stranger = await w.startMerchantV2({ priceMicros: PRICE, offerSignerKey: generatePrivateKey() });
    const { goodId, badId, records, options } = await payBoth(w, genuine, stranger, "receipt");
    const good = { body: { id: goodId } };
    const bad = { body: { id: badId } };

    // The genuine merchant's receipt is in its settlement response.
    const goodReceipt = records.filter((r) => r.payment_id === good.body.id).map(receiptIn).find(Boolean);
    expect(goodReceipt).toMatchObject({ format: "eip712", payload: { resourceUrl: `${genuine.url}/paid`, network: "eip155:8453" } });
    expect(records.filter((r) => r.payment_id === bad.body.id).some((r) => receiptIn(r))).toBe(true);

    const report = await verifyEvidence(iterate(records), { ...options, head: await w.ctx.ledger.evidence.head(w.server.projectId) });
    const badSeqs = records.filter((r) => r.payment_id === bad.body.id && receiptIn(r)).map((r) => Number(r.seq));
    // Only the stranger's receipt is reported (once: its signature is checked once), and as not authorised.
    expect(report.problems.map((p) => ({ code: p.code, paymentId: p.paymentId }))).toEqual([{ code: "receipt_signer_not_authorized", paymentId: bad.body.id }]);
    expect(badSeqs).toContain(report.problems[0]!.seq);

    // The genuine receipt's signature altered in every record that carries it, and the chain re-hashed.
    const flip = (sig: string) => `${sig.slice(0, 10)}${sig[10] === "0" ? "1" : "0"}${sig.slice(11)}`;
    const forged = withReceiptChanged(records, goodReceipt!.signature, flip);
    expect(forged).not.toEqual(records);
    const forgedReport = await verifyEvidence(iterate(forged), options);
    const codes = forgedReport.problems.map((p) => `${p.code}:${p.paymentId}`);
    expect(codes).toContain(`receipt_signature_invalid:${good.body.id}`);
    expect(codes).toContain(`receipt_signer_not_authorized:${bad.body.id}`);
    expect(forgedReport.problems.filter((p) => p.code === "hash_mismatch" || p.code === "chain_broken")).toEqual([]);
  });

  test("the quote verifies the payTo's JWS offer, names one by another key as not authorised and a forged one as not holding; the evidence does the same for receipts", async () => {
    const payToKey = generatePrivateKey();
    const genuine = await w.startMerchantV2({ priceMicros: PRICE, offerSignerKey: payToKey, offerSignatureFormat: "jws", payTo: privateKeyToAccount(payToKey).address });
    const stranger = await w.startMerchantV2({ priceMicros: PRICE, offerSignerKey: generatePrivateKey(), offerSignatureFormat: "jws" });

    const good = await w.post("/v1/quote", { recipient: `${genuine.url}/paid` });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body.offer).toMatchObject({ format: "jws", verification: "verified", signer: genuine.payTo, reason: null, payload: { payTo: genuine.payTo, amount: String(PRICE) } });
    const bad = await w.post("/v1/quote", { recipient: `${stranger.url}/paid` });
    expect(bad.body.offer).toMatchObject({ format: "jws", verification: "invalid" });
    expect((bad.body.offer as { reason: string }).reason).toMatch(/is not the offer's payTo .*not shown to be authorised/);

    // The genuine merchant's 402 as it sent it, with its offer's price lowered under the same signature.
    const unpaid = await fetch(`${genuine.url}/paid`);
    const paymentRequired = decodePaymentRequiredHeader(unpaid.headers.get("payment-required")!);
    const info = (paymentRequired.extensions as Record<string, { info: { offers: { format: string; signature: string }[] } }>)["offer-receipt"]!.info;
    expect(info.offers[0]!.format).toBe("jws");
    info.offers[0]!.signature = reworded(info.offers[0]!.signature, "amount", "1");
    const terms = { scheme: "exact", network: "eip155:8453", asset: w.usdc, payTo: genuine.payTo, amountMicros: 1 };
    const forged = await readOffer(paymentRequired, terms, Math.floor(Date.now() / 1000));
    expect(forged).toMatchObject({ format: "jws", verification: "invalid", payload: { amount: "1" } });
    expect(forged!.reason).toMatch(/does not verify under the key its kid names/);

    const { goodId, badId, records, options } = await payBoth(w, genuine, stranger, "jws");
    const paidGood = { body: { id: goodId } };
    const paidBad = { body: { id: badId } };
    const goodReceipt = records.filter((r) => r.payment_id === paidGood.body.id).map(receiptIn).find(Boolean);
    expect(goodReceipt).toMatchObject({ format: "jws" });

    // The stranger's receipt verifies under its key, which is not the payTo's: named, once.
    const report = await verifyEvidence(iterate(records), { ...options, head: await w.ctx.ledger.evidence.head(w.server.projectId) });
    // (The file's earlier payments have problems of their own: only this test's payments are looked at.)
    const ours = report.problems.filter((p) => p.paymentId === paidGood.body.id || p.paymentId === paidBad.body.id);
    expect(ours.map((p) => ({ code: p.code, paymentId: p.paymentId }))).toEqual([{ code: "receipt_signer_not_authorized", paymentId: paidBad.body.id }]);
    expect(ours[0]!.detail).toMatch(/JWS receipt is signed by the key did:jwk:/);

    // The genuine receipt's payer changed in every record that carries it, and the chain re-hashed to hide it.
    const forgedRecords = withReceiptChanged(records, goodReceipt!.signature, (jws) => reworded(jws, "payer", genuine.payTo));
    const forgedReport = await verifyEvidence(iterate(forgedRecords), options);
    const codes = forgedReport.problems.map((p) => `${p.code}:${p.paymentId}`);
    expect(codes).toContain(`receipt_signature_invalid:${paidGood.body.id}`);
    expect(codes).toContain(`receipt_signer_not_authorized:${paidBad.body.id}`);
    expect(forgedReport.problems.filter((p) => p.code === "hash_mismatch" || p.code === "chain_broken")).toEqual([]);
  });
});
