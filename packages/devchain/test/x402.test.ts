// Paid round trips through Coinbase's own x402 stack on the dev chain: @x402/fetch client →
// merchant (@x402/express v2 or x402-express v1) → our facilitator → TestUSDC on anvil.
// Chain time is never moved here: x402 checks validAfter/validBefore against the wall clock.
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { decodePaymentResponseHeader, wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import {
  startDevChain,
  startFacilitator,
  startMerchantV1,
  startMerchantV2,
  usdcBalanceOf,
  type DevChain,
  type Facilitator,
  type Merchant,
} from "../src/index.ts";

const PRICE_V2_MICROS = 10_000n; // $0.01
const PRICE_V1_MICROS = 25_000n; // $0.025
const SPEND_CAP_MICROS = 1_000_000n;
/**
 * The v1 network name as a spend-control network. The type says CAIP-2 (`${string}:${string}`), but
 * v1 requirements carry "base", and an entry only matches v1 payments when it says "base" too.
 */
const V1_BASE = "base" as `${string}:${string}`;

let chain: DevChain;
let facilitator: Facilitator;
let merchantV2: Merchant;
let merchantV1: Merchant;

beforeAll(async () => {
  chain = await startDevChain();
  await chain.mint(chain.accounts.payer.address, 10_000_000n);
  // The facilitator first: the v2 merchant reads its /supported at start-up.
  facilitator = await startFacilitator({ rpcUrl: chain.rpcUrl, privateKey: chain.accounts.facilitator.privateKey });
  const common = { facilitatorUrl: facilitator.url, payTo: chain.accounts.merchant.address, usdcAddress: chain.usdcAddress };
  merchantV2 = await startMerchantV2({ ...common, priceMicros: PRICE_V2_MICROS });
  merchantV1 = await startMerchantV1({ ...common, priceMicros: PRICE_V1_MICROS });
});

afterAll(async () => {
  await merchantV1?.stop();
  await merchantV2?.stop();
  await facilitator?.stop();
  await chain?.stop();
});

/**
 * The payer as the server's x402 rail would configure it: the custom asset must be allowed
 * explicitly, once per protocol version, because v1 requirements name the network "base" and v2
 * ones "eip155:8453"; the atomic cap is a second guard on top of our own checks.
 */
function payingFetch(): typeof fetch {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(chain.accounts.payer.privateKey) });
  client.setSpendControls({
    allowedAssets: [
      { network: "eip155:8453", asset: chain.usdcAddress, maxAmountPerPayment: SPEND_CAP_MICROS.toString() },
      { network: V1_BASE, asset: chain.usdcAddress, maxAmountPerPayment: SPEND_CAP_MICROS.toString() },
    ],
  });
  return wrapFetchWithPayment(fetch, client);
}

const balanceOf = (address: `0x${string}`) => usdcBalanceOf(chain.rpcUrl, chain.usdcAddress, address);
const balances = async () => ({
  payer: await balanceOf(chain.accounts.payer.address),
  merchant: await balanceOf(chain.accounts.merchant.address),
  facilitator: await balanceOf(chain.accounts.facilitator.address),
});

describe("facilitator", () => {
  test("default: /supported lists exact on eip155:8453 (v2) and base (v1) with our signer", async () => {
    const supported = (await (await fetch(`${facilitator.url}/supported`)).json()) as {
      kinds: { x402Version: number; scheme: string; network: string }[];
      signers: Record<string, string[]>;
    };
    expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: "exact", network: "eip155:8453" });
    expect(supported.kinds).toContainEqual({ x402Version: 1, scheme: "exact", network: "base" });
    expect(supported.signers["eip155:*"]).toEqual([chain.accounts.facilitator.address]);
  });

  test("error: a malformed verify request is a 400 with a reason code, not a crash", async () => {
    const response = await fetch(`${facilitator.url}/verify`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ paymentPayload: {} }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ isValid: false, invalidReason: "invalid_payload" });
  });

  test("error: an unsupported network is an invalid payment, not a server fault", async () => {
    const response = await fetch(`${facilitator.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        x402Version: 2,
        paymentPayload: { x402Version: 2, payload: {} },
        paymentRequirements: { scheme: "exact", network: "eip155:1" },
      }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ success: false, errorReason: "unsupported_scheme", network: "eip155:1" });
  });
});

describe.each([
  { version: "v2", merchant: () => merchantV2, priceMicros: PRICE_V2_MICROS, receiptHeader: "payment-response", network: "eip155:8453" },
  { version: "v1", merchant: () => merchantV1, priceMicros: PRICE_V1_MICROS, receiptHeader: "x-payment-response", network: "base" },
])("$version merchant", ({ version, merchant, priceMicros, receiptHeader, network }) => {
  test("behavior: an unpaid request gets 402 with the explicit TestUSDC price", async () => {
    const response = await fetch(`${merchant().url}/paid`);
    expect(response.status).toBe(402);
    const requirements =
      version === "v2"
        ? JSON.parse(Buffer.from(response.headers.get("payment-required")!, "base64").toString("utf8")).accepts[0]
        : ((await response.json()) as { accepts: Record<string, unknown>[] }).accepts[0];
    expect(requirements).toMatchObject({
      scheme: "exact",
      network,
      asset: chain.usdcAddress,
      payTo: chain.accounts.merchant.address,
      extra: { name: "USD Coin", version: "2" },
      ...(version === "v2" ? { amount: priceMicros.toString() } : { maxAmountRequired: priceMicros.toString() }),
    });
  });

  test("behavior: a paid GET settles exactly the price on-chain, from payer to merchant", async () => {
    const before = await balances();
    const response = await payingFetch()(`${merchant().url}/paid`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ paid: true });

    const receipt = decodePaymentResponseHeader(response.headers.get(receiptHeader)!);
    expect(receipt).toMatchObject({ success: true, network, payer: chain.accounts.payer.address });
    expect(receipt.transaction).toMatch(/^0x[0-9a-f]{64}$/);

    const after = await balances();
    expect(after.merchant - before.merchant).toBe(priceMicros);
    expect(before.payer - after.payer).toBe(priceMicros);
    expect(after.facilitator).toBe(before.facilitator);
  });

  test("behavior: a paid POST reaches the handler with its body and is charged once", async () => {
    const before = await balances();
    const response = await payingFetch()(`${merchant().url}/paid`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ query: "weather", version }),
    });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ query: "weather", version });
    const after = await balances();
    expect(after.merchant - before.merchant).toBe(priceMicros);
    expect(before.payer - after.payer).toBe(priceMicros);
  });

  test("behavior: /free answers without payment and costs nothing", async () => {
    const before = await balances();
    const response = await payingFetch()(`${merchant().url}/free`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ free: true });
    expect(response.headers.get(receiptHeader)).toBeNull();
    expect(await balances()).toEqual(before);
  });

  test("error: settling the same payment twice moves the money once, and the facilitator stays up", async () => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(chain.accounts.payer.privateKey) });
    client.setSpendControls({ allowedAssets: true });
    const unpaid = await fetch(`${merchant().url}/paid`);
    const body: unknown = version === "v1" ? await unpaid.json() : undefined;
    const paymentRequired = new x402HTTPClient(client).getPaymentRequiredResponse((name) => unpaid.headers.get(name), body);
    const paymentPayload = await client.createPaymentPayload(paymentRequired);
    const settle = async () => {
      const response = await fetch(`${facilitator.url}/settle`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          x402Version: paymentPayload.x402Version,
          paymentPayload,
          paymentRequirements: paymentRequired.accepts[0],
        }),
      });
      return { status: response.status, body: (await response.json()) as { success: boolean; errorReason?: string } };
    };

    const before = await balances();
    expect(await settle()).toMatchObject({ status: 200, body: { success: true } });
    const replay = await settle();
    expect(replay.body.success).toBe(false);
    // v2 reports a stable code; v1 puts viem's whole error message in errorReason.
    expect(replay.body.errorReason).toMatch(
      version === "v2" ? /^invalid_exact_evm_nonce_already_used$/ : /authorization is used or canceled/,
    );
    expect((await balances()).merchant - before.merchant).toBe(priceMicros);
    expect((await fetch(`${facilitator.url}/supported`)).status).toBe(200);
  });

  test("error: the x402 client refuses our TestUSDC unless spend controls allow it", async () => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(chain.accounts.payer.privateKey) });
    const before = await balances();
    await expect(wrapFetchWithPayment(fetch, client)(`${merchant().url}/paid`)).rejects.toThrow(
      /rejected by spendControls/,
    );
    expect(await balances()).toEqual(before);
  });

  test("error: a price above the per-asset cap is refused before anything is signed", async () => {
    const client = new x402Client();
    registerExactEvmScheme(client, { signer: privateKeyToAccount(chain.accounts.payer.privateKey) });
    const capMicros = (priceMicros - 1n).toString();
    client.setSpendControls({
      allowedAssets: [
        { network: "eip155:8453", asset: chain.usdcAddress, maxAmountPerPayment: capMicros },
        { network: V1_BASE, asset: chain.usdcAddress, maxAmountPerPayment: capMicros },
      ],
    });
    await expect(wrapFetchWithPayment(fetch, client)(`${merchant().url}/paid`)).rejects.toThrow(/maxAmountPerPayment/);
  });
});

test("behavior: a payer without enough USDC is refused by the merchant and nothing moves", async () => {
  const client = new x402Client();
  const broke = chain.accounts.other;
  registerExactEvmScheme(client, { signer: privateKeyToAccount(broke.privateKey) });
  client.setSpendControls({ allowedAssets: [{ network: "eip155:8453", asset: chain.usdcAddress }] });
  const before = await balanceOf(broke.address);
  expect(before).toBeLessThan(PRICE_V2_MICROS);
  const merchantBefore = await balanceOf(chain.accounts.merchant.address);

  const response = await wrapFetchWithPayment(fetch, client)(`${merchantV2.url}/paid`);
  expect(response.status).toBe(402);
  const required = JSON.parse(Buffer.from(response.headers.get("payment-required")!, "base64").toString("utf8"));
  // Diagnosed through Multicall3: without it every failure would read "...simulation_failed".
  expect(required.error).toMatch(/insufficient_balance/);
  expect(await balanceOf(chain.accounts.merchant.address)).toBe(merchantBefore);
});
