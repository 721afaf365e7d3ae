import { Balance, DepositAddress, ErrorBody, TransactionList } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createToken } from "../src/services/tokens.ts";
import { generateToken } from "../src/tokens.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";

const endpoints = ["/v1/balance", "/v1/stablecoin/address", "/v1/transactions"] as const;

describe.each(dialects)("read API on %s", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let a: Awaited<ReturnType<typeof projectWithToken>>;
  let b: Awaited<ReturnType<typeof projectWithToken>>;

  beforeAll(async () => {
    t = await createTestContext(dialect);
    app = buildApp(t.ctx);
    a = await projectWithToken(t.ctx);
    b = await projectWithToken(t.ctx);
    // Project B gets a deposit so that leaking B's data into A's answers would show.
    await t.ctx.ledger.deposits.recordSeen({ chain: "base", txHash: "0xb1", logIndex: 0, projectId: b.project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 5_000_000, blockNumber: 1, blockHash: "0xh" });
    await t.ctx.ledger.deposits.credit({ chain: "base", txHash: "0xb1", logIndex: 0 });
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  const get = (url: string, token?: string) => app.inject({ method: "GET", url, headers: token ? { authorization: `Bearer ${token}` } : {} });

  test("balance: shape, zeros, wallet_address null before the deposit address exists", async () => {
    const res = await get("/v1/balance", a.token);
    expect(res.statusCode).toBe(200);
    const body = Balance.parse(res.json());
    expect(body).toEqual({ project_id: a.project.id, currency: "usdc", available: 0, pending: 0, total_funded: 0, total_spent: 0, wallet_address: null, frozen: false, frozen_amount: 0, frozen_since: null });
  });

  test("deposit address: created on first call, stable after, and shown in the balance", async () => {
    const first = DepositAddress.parse((await get("/v1/stablecoin/address", a.token)).json());
    expect(first.chain).toBe("base");
    expect(first.currency).toBe("usdc");
    expect(first.address).toMatch(/^0x[0-9a-fA-F]{40}$/);
    const second = DepositAddress.parse((await get("/v1/stablecoin/address", a.token)).json());
    expect(second.address).toBe(first.address);
    expect(Balance.parse((await get("/v1/balance", a.token)).json()).wallet_address).toBe(first.address);
    const other = DepositAddress.parse((await get("/v1/stablecoin/address", b.token)).json());
    expect(other.address).not.toBe(first.address);
  });

  test("transactions: empty list shape", async () => {
    const body = TransactionList.parse((await get("/v1/transactions", a.token)).json());
    expect(body).toEqual({ transactions: [], total_count: 0, has_more: false });
  });

  test("isolation: project A's token never sees project B's data", async () => {
    const bal = Balance.parse((await get("/v1/balance", a.token)).json());
    expect(bal.available).toBe(0);
    const list = TransactionList.parse((await get("/v1/transactions", a.token)).json());
    expect(list.total_count).toBe(0);
    const bList = TransactionList.parse((await get("/v1/transactions", b.token)).json());
    expect(bList.total_count).toBe(1);
    expect(bList.transactions[0]).toMatchObject({ type: "usdc_fund", status: "completed", amount: 5_000_000, currency: "usdc" });
  });

  test.each([
    ["0", 400],
    ["1", 200],
    ["200", 200],
    ["201", 400],
    ["-1", 400],
    ["abc", 400],
    ["1.5", 400],
    ["", 400],
  ])("limit=%s → %i", async (limit, status) => {
    const res = await get(`/v1/transactions?limit=${limit}`, b.token);
    expect(res.statusCode).toBe(status);
    if (status === 400) expect(ErrorBody.parse(res.json()).detail).toMatch(/'limit' must be .*1 to 200/);
  });

  test.each([
    ["0", 200],
    ["1", 200],
    ["5000", 200],
    ["-1", 400],
    ["abc", 400],
  ])("offset=%s → %i", async (offset, status) => {
    const res = await get(`/v1/transactions?offset=${offset}`, b.token);
    expect(res.statusCode).toBe(status);
    if (status === 400) expect(ErrorBody.parse(res.json()).detail).toMatch(/'offset' must be/);
  });

  test("pagination: newest first with a stable tie-break, total_count and has_more", async () => {
    const p = await projectWithToken(t.ctx);
    for (let i = 0; i < 7; i++) {
      const key = { chain: "base", txHash: `0xp${i}`, logIndex: i };
      await t.ctx.ledger.deposits.recordSeen({ ...key, projectId: p.project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1_000 + i, blockNumber: i, blockHash: "0xh" });
      await t.ctx.ledger.deposits.credit(key);
    }
    const all = TransactionList.parse((await get("/v1/transactions?limit=200", p.token)).json());
    expect(all.transactions.map((x) => x.amount)).toEqual([1006, 1005, 1004, 1003, 1002, 1001, 1000]);
    const page = TransactionList.parse((await get("/v1/transactions?limit=3&offset=3", p.token)).json());
    expect(page.transactions.map((x) => x.amount)).toEqual([1003, 1002, 1001]);
    expect(page.total_count).toBe(7);
    expect(page.has_more).toBe(true);
    const last = TransactionList.parse((await get("/v1/transactions?limit=3&offset=6", p.token)).json());
    expect(last.has_more).toBe(false);
    expect(last.transactions).toHaveLength(1);
  });

  describe("token matrix", () => {
    const cases: [string, () => Promise<Record<string, string>>, number][] = [
      ["no header", async () => ({}), 401],
      ["not bearer", async () => ({ authorization: `Basic ${Buffer.from("a:b").toString("base64")}` }), 401],
      ["malformed", async () => ({ authorization: "Bearer aw_test_short" }), 401],
      ["bad checksum", async () => ({ authorization: `Bearer ${a.token.slice(0, -1)}${a.token.endsWith("A") ? "B" : "A"}` }), 401],
      ["unknown", async () => ({ authorization: `Bearer ${generateToken("test")}` }), 401],
      ["revoked", async () => {
        const tok = await createToken(t.ctx, { projectId: a.project.id, permissions: ["read"], mode: "test" });
        await t.ctx.ledger.tokens.revoke(tok.id);
        return { authorization: `Bearer ${tok.token}` };
      }, 401],
      ["expired", async () => {
        const tok = await createToken(t.ctx, { projectId: a.project.id, permissions: ["read"], mode: "test", expiresInMs: 1 });
        await new Promise((r) => setTimeout(r, 5));
        return { authorization: `Bearer ${tok.token}` };
      }, 401],
      ["wrong permission", async () => {
        const tok = await createToken(t.ctx, { projectId: a.project.id, permissions: ["pay"], mode: "test" });
        return { authorization: `Bearer ${tok.token}` };
      }, 403],
      ["valid", async () => ({ authorization: `Bearer ${a.token}` }), 200],
    ];
    for (const endpoint of endpoints) {
      test.each(cases)(`${endpoint} with %s`, async (_name, headers, status) => {
        const res = await app.inject({ method: "GET", url: endpoint, headers: await headers() });
        expect(res.statusCode).toBe(status);
        if (status !== 200) expect(ErrorBody.parse(res.json()).detail.length).toBeGreaterThan(10);
      });
    }

    test("other project's token answers for its own project only", async () => {
      for (const endpoint of endpoints) {
        const res = await get(endpoint, b.token);
        expect(res.statusCode).toBe(200);
        const body = res.json();
        if ("project_id" in body) expect(body.project_id).toBe(b.project.id);
      }
    });

    test("revocation takes effect on the next request", async () => {
      const tok = await createToken(t.ctx, { projectId: a.project.id, permissions: ["read"], mode: "test" });
      expect((await get("/v1/balance", tok.token)).statusCode).toBe(200);
      await t.ctx.ledger.tokens.revoke(tok.id);
      expect((await get("/v1/balance", tok.token)).statusCode).toBe(401);
    });
  });

  test("unknown route → 404 {detail}; health, readiness, metrics and OpenAPI answer", async () => {
    const nf = await get("/v1/nothing", a.token);
    expect(nf.statusCode).toBe(404);
    expect(ErrorBody.parse(nf.json()).detail).toMatch(/No route/);
    expect((await get("/healthz")).json()).toEqual({ status: "ok" });
    expect((await get("/readyz")).json()).toEqual({ status: "ready" });
    const metrics = await get("/metrics");
    expect(metrics.body).toMatch(/agentwallet_http_request_duration_seconds/);
    const doc = (await get("/openapi.json")).json();
    expect(doc.openapi).toBe("3.1.0");
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(["/v1/balance", "/v1/stablecoin/address", "/v1/transactions", "/v1/pay", "/v1/payments", "/v1/x402/pay", "/v1/usdc/transfer"]));
  });

  test("an internal fault is a 500 with a generic detail; the cause is logged, not leaked", async () => {
    const broken = await createTestContext(dialect);
    const brokenApp = buildApp(broken.ctx);
    const p = await projectWithToken(broken.ctx);
    await broken.db.db.schema.dropTable("balances").execute();
    const res = await brokenApp.inject({ method: "GET", url: "/v1/balance", headers: { authorization: `Bearer ${p.token}` } });
    expect(res.statusCode).toBe(500);
    const detail = ErrorBody.parse(res.json()).detail;
    expect(detail).toMatch(/Internal error/);
    expect(detail).not.toMatch(/balances|relation|no such table/i);
    expect(broken.logs.join("")).toMatch(/unhandled error/);
    await brokenApp.close();
    await broken.close();
  });
});
