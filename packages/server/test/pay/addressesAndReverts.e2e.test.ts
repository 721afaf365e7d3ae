// On the real chain and both ledgers: an all-uppercase address (a valid unchecksummed form, EIP-55) is
// accepted, normalised to its checksum and paid; a mixed-case address that fails its checksum is a 400
// and holds nothing; a transfer that reverts on-chain fails at once, credited back, with its code (named by the token's revert reason); a row
// stored before addresses were normalised fails at once instead of retrying for ever; a payout the
// off-ramp refuses fails, credited back, with the off-ramp's words.
import { Balance, PayResponse, TransactionList, UsdcTransferResponse } from "@agentwallet/api";
import { type Address, getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SANDBOX_REFUSE_ACCOUNT } from "../../src/rails/fiat/sandboxProvider.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { createToken } from "../../src/services/tokens.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { createPgSchema, dialects } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { poll } from "../support/poll.ts";
import { openPayments } from "../../src/ledger/testing.ts";

const UPPER = "0x90F79BF6EB2C4F870365E785982E1F101E93B906";
const CHECKSUMMED: Address = getAddress(UPPER.toLowerCase());
const BAD_CHECKSUM = "0x90F79bf6EB2c4f870365E785982E1f101E93B906";

describe.each(dialects)("recipient addresses and reverted transfers on a real chain (%s)", (dialect) => {
  let s: TestServer;
  let dropSchema: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const pg = dialect === "postgres" ? await createPgSchema() : undefined;
    dropSchema = pg?.drop;
    s = await startTestServer({ database: dialect, databaseUrl: pg?.url, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
    await s.fund(20_000_000n);
  });
  afterAll(async () => {
    await s?.stop();
    await dropSchema?.();
  });

  const call = async (path: string, body?: unknown, token = s.token) => {
    const res = await fetch(`${s.baseUrl}${path}`, { method: body === undefined ? "GET" : "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const final = (id: string) =>
    poll(`payment ${id} final`, async () => {
      const p = await s.server.ctx.ledger.payments.getPayment(id);
      return p && ["completed", "failed", "reversed"].includes(p.status) ? p : undefined;
    });
  const chain = () => s.server.chain!.client;

  test("an all-uppercase address is accepted, normalised to its checksum and paid on-chain (POST /v1/pay and /v1/usdc/transfer)", async () => {
    const r0 = await chain().usdcBalance(CHECKSUMMED);
    const pay = await call("/v1/pay", { recipient: UPPER, amount_usd: 0.01 });
    expect(pay.status).toBe(201);
    expect(PayResponse.parse(pay.json).recipient).toBe(CHECKSUMMED);
    const legacy = await call("/v1/usdc/transfer", { amount_usdc: 0.02, to_address: UPPER });
    expect(legacy.status).toBe(201);
    expect(UsdcTransferResponse.parse(legacy.json).to_address).toBe(CHECKSUMMED);
    for (const id of [pay.json.id, legacy.json.id]) {
      const p = await final(id);
      expect(p).toMatchObject({ status: "completed", recipient: CHECKSUMMED, failureCode: null });
    }
    expect((await chain().usdcBalance(CHECKSUMMED)) - r0).toBe(30_000n);
  });

  test("a mixed-case address that fails its checksum is a 400 naming it, and nothing is held", async () => {
    const before = Balance.parse((await call("/v1/balance")).json);
    const pay = await call("/v1/pay", { recipient: BAD_CHECKSUM, amount_usd: 0.01 });
    expect(pay.status).toBe(400);
    expect(pay.json).toMatchObject({ code: "invalid_recipient", detail: expect.stringMatching(/recipient fails its EIP-55 checksum/) });
    const legacy = await call("/v1/usdc/transfer", { amount_usdc: 0.01, to_address: BAD_CHECKSUM });
    expect(legacy.status).toBe(400);
    expect(legacy.json).toMatchObject({ code: "invalid_recipient", detail: expect.stringMatching(/to_address fails its EIP-55 checksum/) });
    expect(Balance.parse((await call("/v1/balance")).json).available).toBe(before.available);
  });

  test("a transfer that reverts on-chain (the wallet holds less than the ledger) fails at once, credited back: wallet_underfunded", async () => {
    // A second project whose ledger credit has no USDC behind it on-chain: its transfer must revert.
    const ctx = s.server.ctx;
    const project = await ctx.ledger.projects.create({ name: "unbacked", plan: "free" });
    const { token } = await createToken(ctx, { projectId: project.id, permissions: ["read", "pay"], mode: "test" });
    const { address } = await getDepositAddress(ctx, project.id);
    const deposit = { chain: "base", txHash: `0x${"5e".repeat(32)}`, logIndex: 0 };
    await ctx.ledger.deposits.recordSeen({ ...deposit, projectId: project.id, toAddress: address, fromAddress: address, amountMicros: 5_000_000, blockNumber: 1, blockHash: `0x${"6f".repeat(32)}` });
    await ctx.ledger.deposits.credit(deposit);
    const res = await call("/v1/pay", { recipient: CHECKSUMMED, amount_usd: 1, idempotency_key: "reverts" }, token);
    expect(res.status).toBe(201);
    const p = await final(res.json.id);
    expect(p).toMatchObject({ status: "failed", failureCode: "wallet_underfunded" });
    expect(p.failureReason).toMatch(/reverted on-chain in transaction 0x[0-9a-f]{64}/);
    const replay = await call("/v1/pay", { recipient: CHECKSUMMED, amount_usd: 1, idempotency_key: "reverts" }, token);
    expect(replay.json).toMatchObject({ id: p.id, status: "failed", failure_code: "wallet_underfunded", failure_message: p.failureReason });
    expect(Balance.parse((await call("/v1/balance", undefined, token)).json).available).toBe(5_000_000);
    const list = TransactionList.parse((await call("/v1/transactions?limit=1", undefined, token)).json);
    expect(list.transactions[0]).toMatchObject({ id: p.id, status: "failed", failure_code: "wallet_underfunded" });
  });

  test("a payment stored with an address the wallet cannot sign for (before normalisation) fails at once, credited back: signing_refused", async () => {
    const ctx = s.server.ctx;
    const before = (await ctx.ledger.balances.get(s.projectId))!.available_micros;
    // As the old validation stored it; the dispatcher takes it, as it took every new payment.
    const h = await ctx.ledger.payments.hold(usdcPayment(s.projectId, 10_000, 200, { recipient: UPPER, leaseOwner: ctx.instanceId, leaseUntil: new Date(Date.now() + 60_000).toISOString() }));
    if (h.kind !== "held") throw new Error(h.kind);
    ctx.dispatch!(h.payment);
    const p = await final(h.payment.id);
    expect(p).toMatchObject({ status: "failed", failureCode: "signing_refused", txHash: null, stepErrors: 0 });
    expect((await ctx.ledger.balances.get(s.projectId))!.available_micros).toBe(before);
  });

  test("a payout the off-ramp refuses fails, credited back: payout_refused with its words", async () => {
    const before = Balance.parse((await call("/v1/balance")).json).available;
    const res = await call("/v1/pay", { recipient: { name: "Refused Payee", account_number: SANDBOX_REFUSE_ACCOUNT, routing_number: "021000021" }, amount_usd: 1.5 });
    expect(res.status).toBe(201);
    const p = await final(res.json.id);
    expect(p).toMatchObject({ status: "failed", failureCode: "payout_refused" });
    const list = TransactionList.parse((await call("/v1/transactions?limit=2")).json);
    expect(list.transactions.map((x) => [x.type, x.status, x.failure_code])).toEqual([
      ["payment", "failed", "payout_refused"],
      ["platform_fee", "failed", "payout_refused"],
    ]);
    expect(list.transactions[0]!.failure_message).toMatch(/does not pay out to account 3333000000/);
    expect(Balance.parse((await call("/v1/balance")).json).available).toBe(before);
  });

  test("the ledger verifies", async () => {
    await poll("no open payments", async () => ((await openPayments(s.server.ctx.ledger)).length === 0 ? true : undefined));
    expect((await s.server.ctx.ledger.verify()).problems).toEqual([]);
  });
});
