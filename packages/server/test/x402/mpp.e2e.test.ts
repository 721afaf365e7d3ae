// POST /v1/pay pays an HTTP API that asks for the Machine Payments Protocol, through the same core as x402:
// mppx's own server (its EVM charge method) on the local chain settles the project wallet's authorization
// itself. Every figure is read back from the chain. A route that offers both protocols is paid once, by
// x402; refusals leave nothing signed or held.
import { Challenge } from "mppx";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { feeFor } from "../../src/money.ts";
import { recordsOf, verifyEvidence } from "../../src/services/evidence/verifyEvidence.ts";
import { startHandBuiltTarget } from "./support/handBuiltTarget.ts";
import { type X402World, randomAddress, startX402World } from "./support/x402World.ts";
import { evidenceRows, setEvidence } from "../../src/ledger/testing.ts";

const PRICE = 20_000n;

describe.each(["sqlite", "postgres"] as const)("MPP on %s", (database) => {
  let w: X402World;
  let mpp: Awaited<ReturnType<X402World["startMppMerchant"]>>;
  let both: Awaited<ReturnType<X402World["startMppMerchant"]>>;
  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 5_000_000n });
    mpp = await w.startMppMerchant(PRICE, "mpp");
    both = await w.startMppMerchant(PRICE, "both");
  });
  afterAll(async () => {
    await w?.stop();
  });

  test("behavior: an MPP target is paid once: the price on-chain to its recipient, the fee to the treasury, the receipt returned", async () => {
    const fee = BigInt(feeFor(Number(PRICE), "free"));
    const [merchantBefore, treasuryBefore] = [await w.balanceOf(mpp.payTo), await w.balanceOf(w.treasury)];
    const available = (await w.get("/v1/balance")).body.available as number;
    const answer = await w.post("/v1/pay", { recipient: `${mpp.url}/paid`, max_amount_usdc: Number(PRICE) });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    // The receipt comes back in the reply; the service's own tx_hash follows once it is proven on-chain.
    expect(answer.body).toMatchObject({ rail: "x402", protocol: "mpp", amount_charged: Number(PRICE), fee: Number(fee), tx_hash: null });
    const response = answer.body.response as { status_code: number; headers: Record<string, string>; body: string };
    expect(response.status_code).toBe(200);
    expect(JSON.parse(response.body)).toEqual({ paid: true, method: "GET" });
    expect(Object.keys(response.headers)).toContain("payment-receipt");
    expect(await w.settle(answer.body.id as string)).toBe("completed");
    expect(mpp.settled()).toHaveLength(1);
    expect((await w.balanceOf(mpp.payTo)) - merchantBefore).toBe(PRICE);
    expect((await w.balanceOf(w.treasury)) - treasuryBefore).toBe(fee);
    expect(available - ((await w.get("/v1/balance")).body.available as number)).toBe(Number(PRICE + fee));
    const read = await w.get(`/v1/transactions/${answer.body.id as string}`);
    expect(read.body).toMatchObject({ status: "completed", tx_hash: mpp.settled()[0] });
  });

  test("behavior: the same key sent 30 times at once is one payment and one settlement", async () => {
    const before = both.settled().length;
    const key = `mpp-key-${database}`;
    const answers = await Promise.all(Array.from({ length: 30 }, () => w.post("/v1/pay", { recipient: `${mpp.url}/paid`, max_amount_usdc: Number(PRICE), idempotency_key: key })));
    const ids = new Set(answers.filter((a) => a.status === 200).map((a) => a.body.id));
    expect(ids.size).toBe(1);
    for (const a of answers) expect([200, 409]).toContain(a.status);
    expect(await w.settle([...ids][0] as string)).toBe("completed");
    expect(mpp.settled()).toHaveLength(2);
    expect(both.settled()).toHaveLength(before);
  });

  test("behavior: a route that offers both protocols is paid exactly once, by x402", async () => {
    const merchantBefore = await w.balanceOf(both.payTo);
    const answer = await w.post("/v1/pay", { recipient: `${both.url}/paid`, max_amount_usdc: Number(PRICE) });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body.protocol).toBeUndefined();
    expect(await w.settle(answer.body.id as string)).toBe("completed");
    expect(both.settled()).toHaveLength(1);
    expect((await w.balanceOf(both.payTo)) - merchantBefore).toBe(PRICE);
  });

  test("error: refusals sign and hold nothing: a price above max_amount_usdc (never retried by the other protocol), and the caller's own Authorization", async () => {
    const available = (await w.get("/v1/balance")).body.available as number;
    const signatures = w.signatures.count();
    const settled = [mpp.settled().length, both.settled().length];
    const dear = await w.post("/v1/pay", { recipient: `${mpp.url}/paid`, max_amount_usdc: Number(PRICE) - 1 });
    expect(dear.status).toBe(400);
    expect(dear.body.code).toBe("x402_price_above_max");
    // Offered both, refused by x402: MPP is not tried in its place.
    const dearBoth = await w.post("/v1/pay", { recipient: `${both.url}/paid`, max_amount_usdc: Number(PRICE) - 1 });
    expect(dearBoth.body.code).toBe("x402_price_above_max");
    const own = await w.post("/v1/pay", { recipient: `${mpp.url}/paid`, max_amount_usdc: Number(PRICE), headers: { authorization: "Bearer the-agents-own-key" } });
    expect(own.status).toBe(400);
    expect(own.body).toMatchObject({ code: "invalid_request", detail: expect.stringContaining("Authorization header") });
    expect(w.signatures.count()).toBe(signatures);
    expect((await w.get("/v1/balance")).body.available).toBe(available);
    expect([mpp.settled().length, both.settled().length]).toEqual(settled);
  });

  test("error: a target whose challenge changes on the paid retry gets one signature and no second payment; the payment fails and is credited back once the first expires", async () => {
    const available = (await w.get("/v1/balance")).body.available as number;
    const signatures = w.signatures.count();
    const challenge = (amount: string) =>
      Challenge.serialize(
        Challenge.from({
          id: `c-${amount}`,
          realm: "rogue.test",
          method: "evm",
          intent: "charge",
          expires: new Date(Date.now() + 4_000).toISOString(),
          request: { amount, currency: w.usdc, recipient: randomAddress(), methodDetails: { chainId: 8453, credentialTypes: ["authorization"], decimals: 6 } },
        } as never),
      );
    // Answers every request with a challenge; the paid retry gets a dearer one (and nothing is settled).
    const rogue = await startHandBuiltTarget((req) => ({ status: 402, headers: { "www-authenticate": challenge(req.headers.authorization ? "30000" : "10000") }, body: "{}" }));
    try {
      const answer = await w.post("/v1/pay", { recipient: `${rogue.url}/paid`, max_amount_usdc: 50_000 });
      expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      expect(answer.body).toMatchObject({ status: "processing", protocol: "mpp", tx_hash: null });
      expect(rogue.requests.filter((r) => r.headers.authorization)).toHaveLength(1);
      expect(w.signatures.count() - signatures).toBe(1);
      expect(await w.settle(answer.body.id as string, 30_000)).toBe("failed");
      expect((await w.get("/v1/balance")).body.available).toBe(available);
      expect(rogue.requests.filter((r) => r.headers.authorization)).toHaveLength(1);
      expect(w.signatures.count() - signatures).toBe(1);
    } finally {
      await rogue.close();
    }
  });

  test("behavior: the evidence carries the challenge, the credential sent and the Payment-Receipt; verify-evidence passes, and an edit of any of them in the database is named by its record", async () => {
    const answer = await w.post("/v1/pay", { recipient: `${mpp.url}/paid`, max_amount_usdc: Number(PRICE) });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const id = answer.body.id as string;
    expect(await w.settle(id)).toBe("completed");
    const receiptHeader = (answer.body.response as { headers: Record<string, string> }).headers["payment-receipt"];

    const rows = await evidenceRows(w.ctx.ledger, w.server.projectId, { paymentId: id });
    const settled = rows.find((r) => JSON.parse(r.body).rail_state?.settlement);
    if (!settled) throw new Error(`payment ${id} has no record of its settlement`);
    const state = JSON.parse(settled.body).rail_state;
    expect(state).toMatchObject({ protocol: "mpp", mpp: { challenge: expect.stringMatching(/^Payment /) }, sent: { name: "authorization", value: expect.stringMatching(/^Payment /) }, settlement: { source: "receipt", receipt: receiptHeader } });
    expect(Challenge.deserialize(state.mpp.challenge).id).toBe(state.mpp.challengeId);

    const chain = w.server.server.chain!.client;
    const verify = async () => (await verifyEvidence(recordsOf(w.ctx.ledger.evidence, w.server.projectId), { domain: { chainId: chain.settings.chainId, usdc: chain.usdcAddress }, receipt: (h) => chain.receipt(h) as never, head: await w.ctx.ledger.evidence.head(w.server.projectId) })).problems;
    expect((await verify()).filter((p) => p.paymentId === id)).toEqual([]);

    // Each field edited in the database (one character of it), then put back: the record is named by its number.
    const edits = { challenge: state.mpp.challenge as string, credential: state.sent.value as string, receipt: state.settlement.receipt as string };
    for (const [field, value] of Object.entries(edits)) {
      const i = value.length - 3;
      const edited = `${value.slice(0, i)}${value[i] === "A" ? "B" : "A"}${value.slice(i + 1)}`;
      expect(settled.body).toContain(JSON.stringify(value).slice(1, -1));
      await setEvidence(w.ctx.ledger, w.server.projectId, settled.seq, { body: settled.body.replace(JSON.stringify(value).slice(1, -1), JSON.stringify(edited).slice(1, -1)) });
      try {
        const named = (await verify()).filter((p) => p.paymentId === id);
        expect(named, field).toContainEqual(expect.objectContaining({ seq: Number(settled.seq), code: "hash_mismatch" }));
      } finally {
        await setEvidence(w.ctx.ledger, w.server.projectId, settled.seq, { body: settled.body });
      }
    }
    expect((await verify()).filter((p) => p.paymentId === id)).toEqual([]);
  });
});
