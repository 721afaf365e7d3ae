/**
 * End to end: the real Agent Wallet server (sandbox: real database, real local chain, started by the server's
 * own test harness) behind the real `agentwallet-mcp` bin, driven by the SDK's `Client` over stdio, by the MCP
 * Inspector CLI, and over Streamable HTTP. Each tool's answer is compared with what the HTTP API returns for
 * the same request: reads directly, payments by replaying the tool's idempotency key against the API (which
 * returns the original payment). x402 payments go to a real x402 merchant and facilitator on the same chain.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createWalletClient, WalletApiError, type WalletClient } from "@agentwallet/api";
import { startFacilitator, startMerchantV2, startMppMerchant, type Facilitator, type Merchant, type MppMerchant } from "@agentwallet/devchain";
import { startTestServer, type TestServer } from "../../server/src/testing/harness.ts";
import { poll } from "../../server/test/support/poll.ts";
import { connectStdio, ensureInspector, inspector, startHttpBin, textOf, type StdioSession } from "./helpers.ts";

const fundedMicros = 50_000_000n;
const x402PriceMicros = 10_000n;
const randomAddress = () =>
  `0x${Array.from({ length: 40 }, () => "0123456789abcdef"[Math.floor(Math.random() * 16)]).join("")}`;
const bank = { name: "Jane Doe", account_number: "000123456789", routing_number: "021000021" };

type Payment = Record<string, unknown> & { id: string };

describe("against the real Agent Wallet server", () => {
  beforeAll(() => ensureInspector(), 240_000);
  let server: TestServer;
  let facilitator: Facilitator;
  let merchant: Merchant;
  let mppMerchant: MppMerchant;
  let api: WalletClient;
  let session: StdioSession;
  const env = () => ({ AGENTWALLET_API_TOKEN: server.token, AGENTWALLET_BASE_URL: server.baseUrl });
  const call = async (name: string, args: Record<string, unknown> = {}) => {
    const result = await session.client.callTool({ name, arguments: args });
    return { result, data: result.structuredContent as Payment, text: textOf(result) };
  };
  /** The API's own answer to a request whose idempotency key a tool call already used: the original payment. */
  const replay = async (send: () => Promise<{ data: unknown }>) => (await send()).data as Payment;

  beforeAll(async () => {
    server = await startTestServer();
    await server.fund(fundedMicros);
    api = createWalletClient({ baseUrl: server.baseUrl, token: server.token });
    session = await connectStdio(env());
    const chain = server.server.chain;
    if (!chain?.sandbox) throw new Error("the harness runs a sandbox chain");
    // An account of its own, so its settlement transactions never race another facilitator's nonces.
    const settler = chain.sandbox.accounts.other;
    if (!settler) throw new Error("dev account `other` is missing");
    facilitator = await startFacilitator({ rpcUrl: chain.sandbox.rpcUrl, privateKey: settler.privateKey });
    merchant = await startMerchantV2({
      facilitatorUrl: facilitator.url,
      payTo: randomAddress() as `0x${string}`,
      usdcAddress: chain.client.usdcAddress,
      priceMicros: x402PriceMicros,
    });
    // mppx's own server (the Machine Payments Protocol's EVM charge), settling from the dev merchant account.
    mppMerchant = await startMppMerchant({
      rpcUrl: chain.sandbox.rpcUrl,
      chainId: chain.client.settings.chainId,
      usdcAddress: chain.client.usdcAddress,
      payTo: randomAddress() as `0x${string}`,
      priceMicros: x402PriceMicros,
      settlerKey: chain.sandbox.accounts.merchant!.privateKey,
    });
  });
  afterAll(async () => {
    await session?.close();
    await mppMerchant?.stop();
    await merchant?.stop();
    await facilitator?.stop();
    await server?.stop();
  });

  test("default: get_balance returns what GET /v1/balance returns", async () => {
    const { result, data } = await call("get_balance");
    expect(result.isError).toBeFalsy();
    expect(data).toEqual((await api.getBalance()).data);
    expect(data).toMatchObject({ project_id: server.projectId, available: Number(fundedMicros) });
  });

  test("default: get_usdc_deposit_address returns what GET /v1/stablecoin/address returns", async () => {
    const { data } = await call("get_usdc_deposit_address");
    expect(data).toEqual((await api.getDepositAddress()).data);
    expect(data).toMatchObject({ chain: "base", currency: "usdc" });
  });

  test("default: list_transactions returns what GET /v1/transactions returns, paging included", async () => {
    const { data } = await call("list_transactions", { limit: 1, offset: 0 });
    expect(data).toEqual((await api.listTransactions({ limit: 1, offset: 0 })).data);
    expect(data).toMatchObject({ transactions: [{ type: "usdc_fund", amount: Number(fundedMicros) }] });
  });

  test("behavior: a USDC payment made through pay is the API's payment and shows up in list_transactions", async () => {
    const before = (await api.getBalance()).data;
    const args = { recipient: randomAddress(), amount_usd: 1.25, description: "mcp e2e", idempotency_key: "mcp-e2e-pay-1" };
    const { result, data, text } = await call("pay", args);
    expect(result.isError, text).toBeFalsy();
    expect(data).toMatchObject({ rail: "usdc_transfer", amount_charged: 1_250_000, currency: "usdc" });
    // The API answers the address in its EIP-55 checksummed form: the same address as the one sent.
    expect(String(data.recipient).toLowerCase()).toBe(args.recipient);
    expect(stable(await replay(() => api.pay(args)))).toEqual(stable(data));

    const { data: listed } = await call("list_transactions", { limit: 10 });
    const transactions = (listed as unknown as { transactions: { id: string; type: string; amount: number }[] }).transactions;
    expect(transactions).toContainEqual(expect.objectContaining({ id: data.id, type: "usdc_transfer", amount: 1_250_000 }));
    expect(transactions).toContainEqual(expect.objectContaining({ type: "platform_fee", amount: data.fee }));
    const after = (await api.getBalance()).data;
    expect(after.available).toBe(before.available - 1_250_000 - (data.fee as number));
  });

  test("behavior: retrying a pay call without a key returns the first payment instead of paying twice", async () => {
    const args = { recipient: randomAddress(), amount_usd: 0.5 };
    const first = await call("pay", args);
    expect(first.result.isError, first.text).toBeFalsy();
    const countAfterFirst = (await api.listTransactions({ limit: 1 })).data.total_count;
    const retry = await call("pay", args);
    expect(retry.data.id).toBe(first.data.id);
    expect(retry.text).toContain("No new payment was made");
    expect((await api.listTransactions({ limit: 1 })).data.total_count).toBe(countAfterFirst);
  });

  test("behavior: pay with a URL pays a real x402 merchant and returns its reply", async () => {
    const args = { recipient: `${merchant.url}/paid`, max_amount_usdc: 20_000, idempotency_key: "mcp-e2e-x402-1" };
    const { result, data, text } = await call("pay", args);
    expect(result.isError, text).toBeFalsy();
    expect(data).toMatchObject({ rail: "x402", amount_charged: Number(x402PriceMicros), currency: "usdc" });
    expect(JSON.parse((data.response as { body: string }).body)).toEqual({ paid: true });
    expect(stable(await replay(() => api.pay(args)))).toEqual(stable(data));
  });

  test("behavior: check_price, then pay with its quote_id at exactly that price, then get_transaction shows the payment", async () => {
    const quoted = await call("check_price", { recipient: `${merchant.url}/paid` });
    expect(quoted.result.isError, quoted.text).toBeFalsy();
    expect(quoted.data).toMatchObject({ payment_required: true, amount_usdc: Number(x402PriceMicros), controls: { verdict: "would_pay" } });
    expect(quoted.text).toContain(`quote_id "${String(quoted.data.quote_id)}"`);
    const paid = await call("pay", { recipient: `${merchant.url}/paid`, quote_id: quoted.data.quote_id, idempotency_key: "mcp-e2e-quote-1" });
    expect(paid.result.isError, paid.text).toBeFalsy();
    expect(paid.data).toMatchObject({ rail: "x402", amount_charged: quoted.data.amount_usdc, fee: quoted.data.fee_usdc });
    // Read once the payment is final (its settlement may still be confirming), so both reads see one state.
    await poll(`payment ${String(paid.data.id)} final`, async () => (["completed", "failed"].includes((await api.getTransaction(paid.data.id as string)).data.status) ? true : undefined));
    const got = await call("get_transaction", { id: paid.data.id });
    expect(got.result.isError, got.text).toBeFalsy();
    expect(got.data).toEqual((await api.getTransaction(paid.data.id)).data);
    expect(got.data).toMatchObject({ id: paid.data.id, type: "x402_payment", rail: "x402", amount: quoted.data.amount_usdc });
    expect(got.data.approval).toBeUndefined();
  });

  test("behavior: a payment waiting for approval says so in pay's result, until when and how to check; get_transaction shows it required, then approved", async () => {
    const { issueToken } = await import("../../server/src/services/tokens.ts");
    const { decidePayment } = await import("../../server/src/services/approvals.ts");
    const approver = await issueToken(server.server.ctx, { projectId: server.projectId, permissions: ["read", "pay"], mode: "test", controls: { approval_above_usd: 1 } });
    const approvalSession = await connectStdio({ AGENTWALLET_API_TOKEN: approver.token, AGENTWALLET_BASE_URL: server.baseUrl });
    try {
      const paid = await approvalSession.client.callTool({ name: "pay", arguments: { recipient: randomAddress(), amount_usd: 2 } });
      expect(paid.isError, textOf(paid)).toBeFalsy();
      const payment = paid.structuredContent as Payment & { approval: { status: string; expires_at: string } };
      expect(payment).toMatchObject({ status: "pending", approval: { status: "required", decided_at: null } });
      expect(textOf(paid)).toContain(`Waiting for a person's approval: nothing is sent until someone approves it, and if nobody does by ${payment.approval.expires_at}`);
      expect(textOf(paid)).toContain(`Check with get_transaction (id "${payment.id}")`);

      const waiting = await approvalSession.client.callTool({ name: "get_transaction", arguments: { id: payment.id } });
      expect(waiting.structuredContent).toMatchObject({ id: payment.id, status: "pending", approval: { status: "required", expires_at: payment.approval.expires_at } });
      expect(textOf(waiting)).toContain("Waiting for a person's approval until");

      await decidePayment(server.server.ctx, payment.id, "approved", "cli:e2e");
      const approved = await approvalSession.client.callTool({ name: "get_transaction", arguments: { id: payment.id } });
      expect(approved.structuredContent).toMatchObject({ approval: { status: "approved", expires_at: payment.approval.expires_at, decided_at: expect.any(String) } });
    } finally {
      await approvalSession.close();
    }
  });

  test("behavior: pay with a URL that asks for MPP pays it the same way and says so", async () => {
    const args = { recipient: `${mppMerchant.url}/paid`, max_amount_usdc: 20_000, idempotency_key: "mcp-e2e-mpp-1" };
    const { result, data, text } = await call("pay", args);
    expect(result.isError, text).toBeFalsy();
    // The receipt is in the reply; the payment's own tx_hash follows once the settlement is proven on-chain.
    expect(data).toMatchObject({ rail: "x402", protocol: "mpp", amount_charged: Number(x402PriceMicros), tx_hash: null });
    expect(Object.keys((data.response as { headers: Record<string, string> }).headers)).toContain("payment-receipt");
    expect(JSON.parse((data.response as { body: string }).body)).toEqual({ paid: true, method: "GET" });
    expect(mppMerchant.settled()).toHaveLength(1);
  });

  test("behavior: the deprecated x402_pay reaches POST /v1/x402/pay and pays the merchant", async () => {
    const { result, data, text } = await call("x402_pay", { url: `${merchant.url}/paid`, max_amount_usdc: 20_000 });
    expect(result.isError, text).toBeFalsy();
    expect(data).toMatchObject({ status_code: 200, payment_amount: Number(x402PriceMicros), settled: true });
    expect(JSON.parse(data.body as string)).toEqual({ paid: true });
    const latest = (await api.listTransactions({ limit: 5 })).data.transactions;
    expect(latest).toContainEqual(expect.objectContaining({ type: "x402_payment", amount: Number(x402PriceMicros) }));
  });

  test("behavior: the deprecated send_usdc and send_payment reach their endpoints and return the API's payment", async () => {
    const usdcArgs = { amount_usdc: 0.75, to_address: randomAddress(), idempotency_key: "mcp-e2e-usdc-1" };
    const usdc = await call("send_usdc", usdcArgs);
    expect(usdc.result.isError, usdc.text).toBeFalsy();
    expect(usdc.data).toMatchObject({ amount_usdc: 0.75, chain: "base" });
    expect(String(usdc.data.to_address).toLowerCase()).toBe(usdcArgs.to_address);
    expect(stable(await replay(() => api.sendUsdc(usdcArgs)))).toEqual(stable(usdc.data));

    const bankArgs = { amount: 150, recipient: bank, idempotency_key: "mcp-e2e-ach-1" };
    const ach = await call("send_payment", bankArgs);
    expect(ach.result.isError, ach.text).toBeFalsy();
    expect(ach.data).toMatchObject({ amount: 150, recipient_name: "Jane Doe" });
    expect(stable(await replay(() => api.sendPayment(bankArgs)))).toEqual(stable(ach.data));

    const ids = (await api.listTransactions({ limit: 20 })).data.transactions.map((tx) => tx.id);
    expect(ids).toEqual(expect.arrayContaining([usdc.data.id, ach.data.id]));
  });

  test("error: a read-only token's pay comes back isError with the API's 403 detail", async () => {
    const readToken = await server.createToken(["read"]);
    const args = { recipient: randomAddress(), amount_usd: 1 };
    const refusal = await createWalletClient({ baseUrl: server.baseUrl, token: readToken })
      .pay(args)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    if (!(refusal instanceof WalletApiError)) throw new Error(`expected the API to refuse, got ${String(refusal)}`);
    expect(refusal.status).toBe(403);
    const readOnly = await connectStdio({ AGENTWALLET_API_TOKEN: readToken, AGENTWALLET_BASE_URL: server.baseUrl });
    try {
      const result = await readOnly.client.callTool({ name: "pay", arguments: args });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain(`HTTP 403: ${refusal.detail}`);
      expect(textOf(result)).toContain("Ask the user for a token with that permission");
      expect(JSON.stringify(result)).not.toContain(readToken);
    } finally {
      await readOnly.close();
    }
  });

  test("error: over the cap, pay is refused and the API records nothing", async () => {
    const capped = await connectStdio({ ...env(), AGENTWALLET_MAX_PAYMENT_USD: "1" });
    try {
      const before = (await api.listTransactions({ limit: 1 })).data.total_count;
      const result = await capped.client.callTool({ name: "pay", arguments: { recipient: randomAddress(), amount_usd: 2 } });
      expect(textOf(result)).toContain("Refused by this MCP server before reaching the API");
      expect((await api.listTransactions({ limit: 1 })).data.total_count).toBe(before);
    } finally {
      await capped.close();
    }
  });

  test("behavior: the Inspector CLI calls get_balance successfully", async () => {
    const result = await inspector(["--method", "tools/call", "--tool-name", "get_balance"], env());
    expect(result.code, result.stderr).toBe(0);
    const output = JSON.parse(result.stdout) as { structuredContent?: unknown; isError?: boolean };
    expect(output.isError).toBeFalsy();
    expect(output.structuredContent).toEqual((await api.getBalance()).data);
  });

  test("behavior: over Streamable HTTP, get_balance returns what the API returns", async () => {
    const http = await startHttpBin(env());
    const client = new Client({ name: "e2e-http", version: "0.0.0" });
    try {
      await client.connect(new StreamableHTTPClientTransport(new URL(http.url)));
      const result = await client.callTool({ name: "get_balance", arguments: {} });
      expect(result.structuredContent).toEqual((await api.getBalance()).data);
    } finally {
      await client.close();
      await http.stop();
    }
  });

  test("behavior: the pay description names the token's limits, get_spending_limits shows what remains, and a refused pay is a tool error with the API's detail", async () => {
    const { issueToken } = await import("../../server/src/services/tokens.ts");
    const controls = { spending_limits: [{ amount_usd: 2, interval: "per_payment" as const }, { amount_usd: 5, interval: "daily" as const }], allowed_rails: ["usdc_transfer" as const] };
    const limited = await issueToken(server.server.ctx, { projectId: server.projectId, permissions: ["read", "pay"], mode: "test", controls });
    const limitedSession = await connectStdio({ AGENTWALLET_API_TOKEN: limited.token, AGENTWALLET_BASE_URL: server.baseUrl });
    try {
      const payTool = (await limitedSession.client.listTools()).tools.find((tool) => tool.name === "pay")!;
      expect(payTool.description).toContain("this token pays at most $2.00 per payment; at most $5.00 per UTC day; only by usdc_transfer");
      const paid = await limitedSession.client.callTool({ name: "pay", arguments: { recipient: randomAddress(), amount_usd: 1.5 } });
      expect(paid.isError, textOf(paid)).toBeFalsy();

      const limits = await limitedSession.client.callTool({ name: "get_spending_limits", arguments: {} });
      expect(limits.isError, textOf(limits)).toBeFalsy();
      expect(limits.structuredContent).toEqual((await createWalletClient({ baseUrl: server.baseUrl, token: limited.token }).getLimits()).data);
      expect(limits.structuredContent).toMatchObject({ project: null, windows: [{ scope: "token", interval: "daily", limit_usd: 5, spent_usd: 1.5, remaining_usd: 3.5 }] });

      const refused = await limitedSession.client.callTool({ name: "pay", arguments: { recipient: randomAddress(), amount_usd: 3 } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toContain("HTTP 403: Spending limit exceeded: this token's per_payment limit is 2.000000 USD and this payment is 3.000000 USD.");
      expect(textOf(refused)).toContain("get_spending_limits shows what remains");
    } finally {
      await limitedSession.close();
    }
    // The harness token has no controls, and its project none: the description says so.
    const unlimited = (await session.client.listTools()).tools.find((tool) => tool.name === "pay")!;
    expect(unlimited.description).toContain("Spending limits: none on this token or its project");
  });
});

/** A payment without the fields that move on after creation (status, on-chain hash, proxied reply headers). */
function stable(payment: Payment): Payment {
  const { status: _status, tx_hash: _txHash, response: _response, ...rest } = payment;
  return rest as Payment;
}
