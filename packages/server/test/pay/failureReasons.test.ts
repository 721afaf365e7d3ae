// What a client can learn of a payment that did not go through: a failed or reversed payment carries
// `failure_code` and `failure_message` in the pay answer (a replay of its key) and in
// GET /v1/transactions; a replay shows the payment as it is now (`reversed` included), also for a
// paused project. On both ledgers (the PostgreSQL resolutions go through the batched function).
import { PayResponse, TransactionList, UsdcTransferResponse } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";

const recipient = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe.each(dialects)("failure reasons and replays as they are now (%s)", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let token: string;
  let projectId: string;
  beforeAll(async () => {
    t = await createTestContext(dialect);
    app = buildApp(t.ctx);
    const p = await projectWithToken(t.ctx);
    token = p.token;
    projectId = p.project.id;
    // A real credit (journal and all), so the ledger verifies at the end.
    const deposit = { chain: "base", txHash: `0x${"11".repeat(32)}`, logIndex: 0 };
    await t.ctx.ledger.deposits.recordSeen({ ...deposit, projectId, toAddress: recipient, fromAddress: recipient, amountMicros: 100_000_000, blockNumber: 1, blockHash: `0x${"22".repeat(32)}` });
    await t.ctx.ledger.deposits.credit(deposit);
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  const post = (url: string, body: unknown) =>
    app.inject({ method: "POST", url, payload: body as object, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" } });
  const held = async (key: string) => {
    const h = await t.ctx.ledger.payments.hold(usdcPayment(projectId, 1_000_000, 20_000, { idempotencyKey: key }));
    if (h.kind !== "held") throw new Error(h.kind);
    return h.payment;
  };

  test("a failed payment's replay answers failed with its code and message; the list shows both on its two transactions", async () => {
    const p = await held("fails");
    const r = await t.ctx.ledger.payments.resolve(p.id, "failed", { failureCode: "onchain_reverted", failureReason: "The USDC transfer reverted on-chain." });
    expect(r.payment).toMatchObject({ status: "failed", failureCode: "onchain_reverted", failureReason: "The USDC transfer reverted on-chain." });
    const replay = await post("/v1/pay", { recipient, amount_usd: 1, idempotency_key: "fails" });
    expect(replay.statusCode).toBe(200);
    expect(replay.headers["idempotent-replayed"]).toBe("true");
    expect(PayResponse.parse(replay.json())).toMatchObject({ id: p.id, status: "failed", failure_code: "onchain_reverted", failure_message: "The USDC transfer reverted on-chain." });
    const list = TransactionList.parse((await app.inject({ method: "GET", url: "/v1/transactions?limit=2", headers: { authorization: `Bearer ${token}` } })).json());
    expect(list.transactions.map((x) => [x.type, x.status, x.failure_code, x.failure_message])).toEqual([
      ["usdc_transfer", "failed", "onchain_reverted", "The USDC transfer reverted on-chain."],
      ["platform_fee", "failed", "onchain_reverted", "The USDC transfer reverted on-chain."],
    ]);
  });

  test("a payment reversed after completion replays as reversed with the return's code and message, on every endpoint", async () => {
    const p = await held("returned");
    await t.ctx.ledger.payments.resolve(p.id, "completed", { txHash: `0x${"ab".repeat(32)}` });
    expect(await t.ctx.ledger.payments.reverse(p.id, "R01: Insufficient funds")).toBe(true);
    const replay = await post("/v1/pay", { recipient, amount_usd: 1, idempotency_key: "returned" });
    expect(replay.statusCode).toBe(200);
    expect(PayResponse.parse(replay.json())).toMatchObject({ id: p.id, status: "reversed", failure_code: "ach_returned", failure_message: "R01: Insufficient funds" });
    const legacy = await post("/v1/usdc/transfer", { amount_usdc: 1, to_address: recipient, idempotency_key: "returned" });
    expect(legacy.statusCode).toBe(200);
    expect(UsdcTransferResponse.parse(legacy.json())).toMatchObject({ id: p.id, status: "reversed", failure_code: "ach_returned" });
    const list = TransactionList.parse((await app.inject({ method: "GET", url: "/v1/transactions?limit=2", headers: { authorization: `Bearer ${token}` } })).json());
    expect(list.transactions[0]).toMatchObject({ id: p.id, status: "reversed", failure_code: "ach_returned", failure_message: "R01: Insufficient funds" });
  });

  test("completed and open payments carry no failure fields", async () => {
    const done = await held("completes");
    await t.ctx.ledger.payments.resolve(done.id, "completed", { txHash: `0x${"cd".repeat(32)}` });
    const open = await held("open");
    for (const key of ["completes", "open"]) {
      const body = (await post("/v1/pay", { recipient, amount_usd: 1, idempotency_key: key })).json();
      expect(body).not.toHaveProperty("failure_code");
      expect(body).not.toHaveProperty("failure_message");
    }
    const list = TransactionList.parse((await app.inject({ method: "GET", url: "/v1/transactions?limit=4", headers: { authorization: `Bearer ${token}` } })).json());
    for (const x of list.transactions) expect(x).not.toHaveProperty("failure_code");
    expect(open.status).toBe("pending");
  });

  test("a paused project's replay is answered (200, Idempotent-Replayed); a new key is still refused with 403", async () => {
    await t.ctx.ledger.projects.setPaused(projectId, true);
    try {
      for (const [url, body] of [
        ["/v1/pay", { recipient, amount_usd: 1, idempotency_key: "returned" }],
        ["/v1/usdc/transfer", { amount_usdc: 1, to_address: recipient, idempotency_key: "returned" }],
      ] as const) {
        const replay = await post(url, body);
        expect(replay.statusCode).toBe(200);
        expect(replay.headers["idempotent-replayed"]).toBe("true");
        expect(replay.json()).toMatchObject({ status: "reversed", failure_code: "ach_returned" });
        const fresh = await post(url, { ...body, idempotency_key: "new-while-paused" });
        expect(fresh.statusCode).toBe(403);
        expect(fresh.json()).toMatchObject({ code: "project_paused" });
      }
      // The bank endpoint answers only bank payments' keys: this USDC payment's key is refused there, paused or not.
      const bank = await post("/v1/payments", { amount: 100, recipient: { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" }, idempotency_key: "returned" });
      expect([bank.statusCode, bank.json().code]).toEqual([409, "idempotency_key_reused"]);
      const x402 = await post("/v1/pay", { recipient: "https://example.com/paid", idempotency_key: "new-while-paused" });
      expect(x402.statusCode).not.toBe(200);
      expect(await t.ctx.ledger.payments.findPaymentByKey(projectId, "new-while-paused")).toBeUndefined();
    } finally {
      await t.ctx.ledger.projects.setPaused(projectId, false);
    }
  });

  test("the ledger verifies", async () => {
    expect((await t.ctx.ledger.verify()).problems).toEqual([]);
  });
});
