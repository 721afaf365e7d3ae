/**
 * The guards a careful user relies on, driven through the real bin over stdio. The API is replaced by a
 * recording endpoint here because what matters is what reaches it (or that nothing does); the same paths
 * against the real server are in e2e.test.ts.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "vitest";
import { connectStdio as connectBin, fakeToken, recordingApi, textOf, type CannedReply, type RecordedRequest } from "./helpers.ts";

const address = `0x${"ab".repeat(20)}`;
const bank = { name: "Jane Doe", account_number: "000123456789", routing_number: "021000021" };

type Api = Awaited<ReturnType<typeof recordingApi>>;
let reply: (request: RecordedRequest) => CannedReply;
const notCalled = (): CannedReply => ({ status: 500, body: { detail: "test endpoint: should not be called" } });
let api: Api;

beforeAll(async () => {
  api = await recordingApi((request) => reply(request));
});
afterAll(() => api.close());
afterEach(() => {
  api.requests.length = 0;
  reply = notCalled;
});
reply = notCalled;

const baseEnv = () => ({ AGENTWALLET_API_TOKEN: fakeToken, AGENTWALLET_BASE_URL: api.baseUrl });

/**
 * Starts the bin and sets aside its two start-up requests, the probe of GET /v1/tokens for the `delegate`
 * permission (src/delegation.ts; this endpoint's 500 means no create_sub_agent_token) and the read of
 * GET /v1/limits for the `pay` tool's description (src/limits.ts): what the tests below count is what tool
 * calls send.
 */
async function connectStdio(...args: Parameters<typeof connectBin>): ReturnType<typeof connectBin> {
  const session = await connectBin(...args);
  expect(api.requests.map((request) => [request.method, request.path])).toEqual([["GET", "/v1/tokens"], ["GET", "/v1/limits"]]);
  api.requests.length = 0;
  return session;
}

describe("cap: AGENTWALLET_MAX_PAYMENT_USD", () => {
  let session: Awaited<ReturnType<typeof connectStdio>>;
  beforeAll(async () => {
    session = await connectStdio({ ...baseEnv(), AGENTWALLET_MAX_PAYMENT_USD: "5" });
  });
  afterAll(() => session.close());

  test("error: a pay call above the cap is refused and never reaches the API", async () => {
    const result = await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 5.01 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("Refused by this MCP server before reaching the API: $5.01 in USDC");
    expect(textOf(result)).toContain("limit of $5.00");
    expect(api.requests).toEqual([]);
  });

  test("error: every deprecated payment tool is capped the same way", async () => {
    const calls = [
      { name: "send_usdc", arguments: { amount_usdc: 5.000001, to_address: address } },
      { name: "send_payment", arguments: { amount: 501, recipient: bank } },
      { name: "x402_pay", arguments: { url: "https://merchant.example/data", max_amount_usdc: 5_000_001 } },
      { name: "pay", arguments: { recipient: bank, amount_usd: 6 } },
      { name: "pay", arguments: { recipient: "https://merchant.example/data", max_amount_usdc: 6_000_000 } },
    ];
    for (const call of calls) {
      const result = await session.client.callTool(call);
      expect(result.isError, call.name).toBe(true);
      expect(textOf(result), call.name).toContain("Refused by this MCP server");
    }
    expect(api.requests).toEqual([]);
  });

  test("behavior: a payment exactly at the cap is sent", async () => {
    await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 5 } });
    expect(api.requests.map((request) => [request.method, request.path])).toEqual([["POST", "/v1/pay"]]);
    expect(api.requests[0]?.headers.authorization).toBe(`Bearer ${fakeToken}`);
  });

  test("behavior: an x402 pay without max_amount_usdc is sent with the cap as its maximum", async () => {
    await session.client.callTool({ name: "pay", arguments: { recipient: "https://merchant.example/data" } });
    expect(api.requests[0]?.body).toMatchObject({ recipient: "https://merchant.example/data", max_amount_usdc: 5_000_000 });
  });
});

describe("idempotency keys", () => {
  let session: Awaited<ReturnType<typeof connectStdio>>;
  beforeAll(async () => {
    session = await connectStdio(baseEnv());
  });
  afterAll(() => session.close());

  const sentKeys = () => api.requests.map((request) => (request.body as { idempotency_key?: string }).idempotency_key);

  test("behavior: a retried call without a key is sent with the same derived key", async () => {
    const call = { name: "pay", arguments: { recipient: address, amount_usd: 1.5, description: "retry me" } };
    const first = await session.client.callTool(call);
    await session.client.callTool({ ...call, arguments: { description: "retry me", amount_usd: 1.5, recipient: address } });
    await session.client.callTool({ ...call, arguments: { ...call.arguments, amount_usd: 1.6 } });
    const [a, b, c] = sentKeys();
    expect(a).toMatch(/^mcp-[0-9a-f]{32}-[0-9a-z]+$/);
    expect(b).toBe(a);
    expect(c).not.toBe(a);
    expect(textOf(first)).toContain(`retry with idempotency_key "${a}"`);
  });

  test("behavior: a key given by the model is sent unchanged", async () => {
    await session.client.callTool({
      name: "send_usdc",
      arguments: { amount_usdc: 1, to_address: address, idempotency_key: "order-42" },
    });
    await session.client.callTool({ name: "send_payment", arguments: { amount: 100, recipient: bank } });
    const [given, derived] = sentKeys();
    expect(given).toBe("order-42");
    expect(derived).toMatch(/^mcp-/);
  });

  test("behavior: an API replay is reported to the model as no new payment", async () => {
    reply = (request) => ({
      status: 200,
      headers: { "idempotent-replayed": "true" },
      body: {
        id: "tx_1",
        status: "completed",
        rail: "usdc_transfer",
        amount_charged: 1_000_000,
        fee: 20_000,
        currency: "usdc",
        recipient: (request.body as { recipient: string }).recipient,
        tx_hash: `0x${"0".repeat(64)}`,
        created_at: "2026-01-01T00:00:00.000Z",
        estimated_arrival: null,
        response: null,
      },
    });
    const result = await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 1 } });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ id: "tx_1", amount_charged: 1_000_000 });
    expect(textOf(result)).toContain("No new payment was made");
  });
});

describe("confirmation by elicitation (AGENTWALLET_CONFIRM_ABOVE_USD=10)", () => {
  const env = () => ({ ...baseEnv(), AGENTWALLET_CONFIRM_ABOVE_USD: "10" });

  test("behavior: above the threshold the user is asked, and declining pays nothing", async () => {
    const session = await connectStdio(env(), { onElicit: () => ({ action: "decline" }) });
    try {
      const result = await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 20 } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain("The user did not confirm $20.00 in USDC");
      expect(session.elicitations.map((request) => request.message)).toEqual([
        `Confirm payment from your Agent Wallet: $20.00 in USDC to ${address} on Base, plus the platform fee (1-2%).`,
      ]);
      expect(api.requests).toEqual([]);
    } finally {
      await session.close();
    }
  });

  test("behavior: accepting sends the payment; at or under the threshold nobody is asked", async () => {
    const session = await connectStdio(env(), { onElicit: () => ({ action: "accept", content: { confirm: true } }) });
    try {
      await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 20 } });
      await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 10 } });
      expect(session.elicitations).toHaveLength(1);
      expect(api.requests).toHaveLength(2);
    } finally {
      await session.close();
    }
  });

  test("behavior: an x402 payment of unknown price is confirmed; a client without elicitation is not asked", async () => {
    const asking = await connectStdio(env(), { onElicit: () => ({ action: "cancel" }) });
    try {
      const result = await asking.client.callTool({ name: "pay", arguments: { recipient: "https://merchant.example/a" } });
      expect(textOf(result)).toContain("of whatever price it asks");
      expect(api.requests).toEqual([]);
    } finally {
      await asking.close();
    }
    const plain = await connectStdio(env());
    try {
      await plain.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 20 } });
      expect(api.requests).toHaveLength(1);
    } finally {
      await plain.close();
    }
  });
});

describe("errors tell the model what happened and what to do next", () => {
  let session: Awaited<ReturnType<typeof connectStdio>>;
  beforeAll(async () => {
    session = await connectStdio({ ...baseEnv(), AGENTWALLET_TIMEOUT_MS: "1000" });
  });
  afterAll(() => session.close());

  const payOnce = () => session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: 1 } });

  test("error: 403 carries the detail, the status and that retrying will not help", async () => {
    reply = () => ({ status: 403, body: { detail: "This token lacks the pay permission." } });
    const result = await payOnce();
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("HTTP 403: This token lacks the pay permission.");
    expect(textOf(result)).toContain("Ask the user for a token with that permission");
  });

  test("error: insufficient balance says to fund the wallet", async () => {
    reply = () => ({ status: 400, body: { detail: "Insufficient balance: available 0.000000 USDC, required 1.020000 USDC" } });
    expect(textOf(await payOnce())).toContain("Next: fund the wallet: call get_usdc_deposit_address");
  });

  test("error: a price above max_amount_usdc says to raise it if the user accepts", async () => {
    reply = () => ({ status: 400, body: { detail: "Price 20000 micro-USDC exceeds max_amount_usdc 10000" } });
    expect(textOf(await payOnce())).toContain("call again with a higher max_amount_usdc");
  });

  test("error: 429 says how long to wait, from Retry-After", async () => {
    reply = () => ({ status: 429, headers: { "retry-after": "17" }, body: { detail: "Rate limit exceeded" } });
    const result = await session.client.callTool({ name: "get_balance", arguments: {} });
    expect(textOf(result)).toContain("HTTP 429: Rate limit exceeded");
    expect(textOf(result)).toContain("wait 17 s");
  });

  test("error: the token never reaches the model, even when the API echoes it", async () => {
    reply = (request) => ({ status: 401, body: { detail: `Unknown token ${request.headers.authorization}` } });
    const result = await session.client.callTool({ name: "list_transactions", arguments: {} });
    expect(textOf(result)).toContain("HTTP 401: Unknown token Bearer [redacted]");
    expect(JSON.stringify(result)).not.toContain(fakeToken);
  });

  test("error: a timed-out payment may have happened: check, or retry with the same key", async () => {
    reply = () => ({ status: 500, hangMs: 3_000 });
    const result = await payOnce();
    expect(textOf(result)).toContain("within 1 s: the payment may or may not have been made");
    expect(textOf(result)).toMatch(/retry with idempotency_key "mcp-[0-9a-f]{32}-[0-9a-z]+"/);
  });

  test("error: invalid arguments are refused by the schema before any call", async () => {
    const result = await session.client.callTool({ name: "pay", arguments: { recipient: address, amount_usd: -1 } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("amount_usd");
    expect(api.requests).toEqual([]);
  });
});
