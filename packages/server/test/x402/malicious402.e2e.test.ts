// Malicious and broken 402 answers, through the real POST /v1/pay: each is refused before anything is
// signed (0 signatures by any project wallet), no paid retry reaches the target, nothing is held or
// recorded. A hand-built target plays the attacker (honest merchants never send these); a control run
// shows the same target's unaltered requirement is signed, so each refusal is due to its one defect.
import { Challenge } from "mppx";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { X402_REFUSAL_CODES } from "../../src/rails/x402/x402Errors.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { type HandBuiltTarget, type Reply, startHandBuiltTarget, v1PaymentRequired, v2PaymentRequired } from "./support/handBuiltTarget.ts";
import { type X402World, randomAddress, startX402World } from "./support/x402World.ts";

const PRICE = "10000";
const BASE_USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";

let w: X402World;
let target: HandBuiltTarget;
let reply: Reply = { status: 500 };
const payTo = randomAddress();
const addr: Record<"wallet" | "otherProject" | "relayer" | "treasury" | "usdc", string> = { wallet: "", otherProject: "", relayer: "", treasury: "", usdc: "" };

beforeAll(async () => {
  w = await startX402World({ fundMicros: 5_000_000n });
  const chain = w.server.server.chain!;
  const other = await w.ctx.ledger.projects.create({ name: "another", plan: "free" });
  Object.assign(addr, {
    wallet: await w.wallet(),
    otherProject: (await getDepositAddress(w.ctx, other.id)).address,
    relayer: chain.relayerAddress,
    treasury: chain.treasuryAddress,
    usdc: chain.client.usdcAddress,
  });
  target = await startHandBuiltTarget((req) => (req.paymentHeader ? { status: 500, body: "took the signature" } : reply));
});
afterAll(async () => {
  await target?.close();
  await w?.stop();
});

const v2 = (patch: Record<string, unknown> = {}) => ({ scheme: "exact", network: "eip155:8453", amount: PRICE, asset: addr.usdc, payTo, maxTimeoutSeconds: 60, extra: { name: "USD Coin", version: "2" }, ...patch });
const v1 = (patch: Record<string, unknown> = {}) => ({ scheme: "exact", network: "base", maxAmountRequired: PRICE, resource: "http://merchant.test/paid", description: "", mimeType: "application/json", payTo, maxTimeoutSeconds: 60, asset: addr.usdc, extra: { name: "USD Coin", version: "2" }, ...patch });
const without = (key: string, o: Record<string, unknown>) => Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));
const extra = (patch: Record<string, unknown>) => ({ extra: { name: "USD Coin", version: "2", ...patch } });

type Case = { name: string; reply: () => Reply; code: string; status?: number; max?: number };

/** A 402 with an MPP challenge (the EVM charge) and no x402 requirement; `patch` alters the challenge, `request` its request. */
const mpp = (patch: Record<string, unknown> = {}, request: Record<string, unknown> = {}, methodDetails: Record<string, unknown> = {}): Reply => {
  const challenge = Challenge.from({
    id: "c1",
    realm: "merchant.test",
    method: "evm",
    intent: "charge",
    expires: new Date(Date.now() + 300_000).toISOString(),
    request: { amount: PRICE, currency: addr.usdc, recipient: payTo, methodDetails: { chainId: 8453, credentialTypes: ["authorization"], decimals: 6, ...methodDetails }, ...request },
    ...patch,
  } as never);
  return { status: 402, headers: { "www-authenticate": Challenge.serialize(challenge) }, body: "{}" };
};

const cases: Case[] = [
  // MPP challenges (no x402 requirement offered)
  { name: "MPP challenge that does not parse", reply: () => ({ status: 402, headers: { "www-authenticate": "Payment id=" }, body: "{}" }), code: "mpp_challenge_invalid" },
  { name: "MPP challenge that has expired", reply: () => mpp({ expires: new Date(Date.now() - 1_000).toISOString() }), code: "mpp_challenge_invalid" },
  { name: "MPP challenge naming its own credential header", reply: () => mpp({ header: "Host" }), code: "mpp_challenge_invalid" },
  { name: "MPP method other than evm", reply: () => mpp({ method: "tempo" }), code: "x402_no_supported_requirement" },
  { name: "MPP charge on another chain", reply: () => mpp({}, {}, { chainId: 1 }), code: "x402_no_supported_requirement" },
  { name: "MPP charge in another currency", reply: () => mpp({}, { currency: BASE_USDC }), code: "x402_asset_not_allowed" },
  { name: "MPP charge above max_amount_usdc", reply: () => mpp({}, { amount: "20000" }), code: "x402_price_above_max", max: 10_000 },
  { name: "MPP charge with splits", reply: () => mpp({}, {}, { splits: [{ amount: "1", recipient: payTo }] }), code: "x402_transfer_method_unsupported" },
  { name: "MPP charge to our own wallet", reply: () => mpp({}, { recipient: addr.wallet }), code: "x402_pay_to_own_wallet" },
  // price
  { name: "v2 price above max_amount_usdc", reply: () => v2PaymentRequired([v2({ amount: "20000" })]), code: "x402_price_above_max", max: 10_000 },
  { name: "v1 price above max_amount_usdc", reply: () => v1PaymentRequired([v1({ maxAmountRequired: "10001" })]), code: "x402_price_above_max", max: 10_000 },
  // scheme and network
  { name: "scheme other than exact", reply: () => v2PaymentRequired([v2({ scheme: "upto" })]), code: "x402_no_supported_requirement" },
  { name: "v2 network Ethereum mainnet", reply: () => v2PaymentRequired([v2({ network: "eip155:1" })]), code: "x402_no_supported_requirement" },
  { name: "v2 network Base Sepolia", reply: () => v2PaymentRequired([v2({ network: "eip155:84532" })]), code: "x402_no_supported_requirement" },
  { name: "v2 requirement with a v1 network name", reply: () => v2PaymentRequired([v2({ network: "base" })]), code: "x402_no_supported_requirement" },
  { name: "v1 network base-sepolia", reply: () => v1PaymentRequired([v1({ network: "base-sepolia" })]), code: "x402_no_supported_requirement" },
  { name: "v1 requirement with a CAIP-2 network", reply: () => v1PaymentRequired([v1({ network: "eip155:8453" })]), code: "x402_no_supported_requirement" },
  { name: "Solana network", reply: () => v2PaymentRequired([v2({ network: "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp" })]), code: "x402_no_supported_requirement" },
  // asset
  { name: "another token", reply: () => v2PaymentRequired([v2({ asset: randomAddress() })]), code: "x402_asset_not_allowed" },
  { name: "real Base USDC while ours is the test USDC", reply: () => v2PaymentRequired([v2({ asset: BASE_USDC })]), code: "x402_asset_not_allowed" },
  { name: "asset missing", reply: () => v2PaymentRequired([without("asset", v2())]), code: "x402_asset_not_allowed" },
  { name: "v1 another token", reply: () => v1PaymentRequired([v1({ asset: randomAddress() })]), code: "x402_asset_not_allowed" },
  // EIP-712 domain and transfer method
  { name: "extra missing", reply: () => v2PaymentRequired([without("extra", v2())]), code: "x402_eip712_domain_invalid" },
  { name: "extra.name missing", reply: () => v2PaymentRequired([v2({ extra: { version: "2" } })]), code: "x402_eip712_domain_invalid" },
  { name: "extra.version missing", reply: () => v2PaymentRequired([v2({ extra: { name: "USD Coin" } })]), code: "x402_eip712_domain_invalid" },
  { name: "extra.name unexpected", reply: () => v2PaymentRequired([v2(extra({ name: "USDC" }))]), code: "x402_eip712_domain_invalid" },
  { name: "extra.version unexpected", reply: () => v2PaymentRequired([v2(extra({ version: "1" }))]), code: "x402_eip712_domain_invalid" },
  { name: "v1 extra missing", reply: () => v1PaymentRequired([without("extra", v1())]), code: "x402_eip712_domain_invalid" },
  { name: "Permit2 transfer method", reply: () => v2PaymentRequired([v2(extra({ assetTransferMethod: "permit2" }))]), code: "x402_transfer_method_unsupported" },
  { name: "upfront payment flow", reply: () => v2PaymentRequired([v2(extra({ paymentFlow: "upfront" }))]), code: "x402_transfer_method_unsupported" },
  // payTo
  { name: "payTo not an address", reply: () => v2PaymentRequired([v2({ payTo: "merchant.eth" })]), code: "x402_pay_to_invalid" },
  { name: "payTo too short", reply: () => v2PaymentRequired([v2({ payTo: "0x1234" })]), code: "x402_pay_to_invalid" },
  { name: "payTo missing", reply: () => v2PaymentRequired([without("payTo", v2())]), code: "x402_pay_to_invalid" },
  { name: "payTo zero address", reply: () => v2PaymentRequired([v2({ payTo: "0x0000000000000000000000000000000000000000" })]), code: "x402_pay_to_invalid" },
  { name: "payTo with a broken EIP-55 checksum", reply: () => v2PaymentRequired([v2({ payTo: breakChecksum(payTo) })]), code: "x402_pay_to_invalid" },
  { name: "payTo the paying project's own wallet", reply: () => v2PaymentRequired([v2({ payTo: addr.wallet })]), code: "x402_pay_to_own_wallet" },
  { name: "payTo our own wallet, lowercased", reply: () => v2PaymentRequired([v2({ payTo: addr.wallet.toLowerCase() })]), code: "x402_pay_to_own_wallet" },
  { name: "payTo another project's wallet", reply: () => v2PaymentRequired([v2({ payTo: addr.otherProject })]), code: "x402_pay_to_own_wallet" },
  { name: "payTo the relayer", reply: () => v2PaymentRequired([v2({ payTo: addr.relayer })]), code: "x402_pay_to_own_wallet" },
  { name: "payTo the treasury", reply: () => v2PaymentRequired([v2({ payTo: addr.treasury })]), code: "x402_pay_to_own_wallet" },
  { name: "payTo the USDC contract", reply: () => v2PaymentRequired([v2({ payTo: addr.usdc })]), code: "x402_pay_to_own_wallet" },
  { name: "v1 payTo our own wallet", reply: () => v1PaymentRequired([v1({ payTo: addr.wallet })]), code: "x402_pay_to_own_wallet" },
  // maxTimeoutSeconds
  { name: "maxTimeoutSeconds a day", reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: 86_400 })]), code: "x402_max_timeout_invalid" },
  { name: "maxTimeoutSeconds one above the bound", reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: 601 })]), code: "x402_max_timeout_invalid" },
  { name: "maxTimeoutSeconds zero", reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: 0 })]), code: "x402_max_timeout_invalid" },
  { name: "maxTimeoutSeconds negative", reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: -60 })]), code: "x402_max_timeout_invalid" },
  { name: "maxTimeoutSeconds fractional", reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: 59.5 })]), code: "x402_max_timeout_invalid" },
  { name: "maxTimeoutSeconds a string", reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: "60" })]), code: "x402_max_timeout_invalid" },
  { name: "v1 maxTimeoutSeconds huge", reply: () => v1PaymentRequired([v1({ maxTimeoutSeconds: 1e9 })]), code: "x402_max_timeout_invalid" },
  // amount
  ...(
    [
      ["negative", "-10000"],
      ["fractional", "10000.5"],
      ["hex", "0x2710"],
      ["exponent", "1e4"],
      ["empty", ""],
      ["zero", "0"],
      ["leading zero", "010000"],
      ["leading space", " 10000"],
      ["plus sign", "+10000"],
      ["a JSON number", 10_000],
      ["over the 100 USDC cap", "100000001"],
      ["far beyond safe integers", "99999999999999999999999"],
      ["missing", undefined],
    ] as const
  ).flatMap(([what, amount]): Case[] => [
    { name: `v2 amount ${what}`, reply: () => v2PaymentRequired([amount === undefined ? without("amount", v2()) : v2({ amount })]), code: "x402_amount_invalid" },
    { name: `v1 maxAmountRequired ${what}`, reply: () => v1PaymentRequired([amount === undefined ? without("maxAmountRequired", v1()) : v1({ maxAmountRequired: amount })]), code: "x402_amount_invalid" },
  ]),
  // no readable requirements at all: the target's answer is broken (502), still nothing signed
  { name: "402 without requirements", reply: () => ({ status: 402, body: "pay me" }), code: "x402_payment_required_invalid", status: 502 },
  { name: "402 with an undecodable PAYMENT-REQUIRED header", reply: () => ({ status: 402, headers: { "payment-required": "%%%not-base64%%%" }, body: "{}" }), code: "x402_payment_required_invalid", status: 502 },
  { name: "402 with empty accepts", reply: () => v2PaymentRequired([]), code: "x402_payment_required_invalid", status: 502 },
  { name: "402 with 17 accepts", reply: () => v2PaymentRequired(Array.from({ length: 17 }, () => v2())), code: "x402_payment_required_invalid", status: 502 },
  { name: "402 with x402Version 3", reply: () => ({ status: 402, body: JSON.stringify({ x402Version: 3, accepts: [v2()] }) }), code: "x402_payment_required_invalid", status: 502 },
];

describe("malicious 402 answers", () => {
  test("behavior: the list covers every refusal code", () => {
    expect(new Set(cases.map((c) => c.code))).toEqual(new Set([...X402_REFUSAL_CODES, "x402_payment_required_invalid"]));
    expect(cases.length).toBeGreaterThanOrEqual(60);
  });

  test.each(cases)("error: $name → $code, 0 signatures", async (c) => {
    reply = c.reply();
    const before = { signatures: w.signatures.count(), paid: target.paidRequests().length, balance: (await w.get("/v1/balance")).body, txns: (await w.get("/v1/transactions?limit=1")).body.total_count };
    const answer = await w.post("/v1/pay", { recipient: `${target.url}/paid`, max_amount_usdc: c.max ?? 1_000_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(c.status ?? 400);
    expect(answer.body.code).toBe(c.code);
    expect(answer.body.detail).toMatch(/Nothing was signed or charged\.$/);
    expect(w.signatures.count()).toBe(before.signatures);
    expect(target.paidRequests().length).toBe(before.paid);
    expect((await w.get("/v1/balance")).body).toEqual(before.balance);
    expect((await w.get("/v1/transactions?limit=1")).body.total_count).toBe(before.txns);
  });

  test("error: the deprecated endpoint refuses the same way", async () => {
    reply = v2PaymentRequired([v2({ payTo: addr.wallet })]);
    const signatures = w.signatures.count();
    const answer = await w.post("/v1/x402/pay", { url: `${target.url}/paid`, max_amount_usdc: 1_000_000 });
    expect(answer.status).toBe(400);
    expect(answer.body.code).toBe("x402_pay_to_own_wallet");
    expect(w.signatures.count()).toBe(signatures);
  });

  test("error: a price the balance does not cover → 400 insufficient_balance; nothing is signed or sent", async () => {
    reply = v2PaymentRequired([v2({ amount: "6000000" })]);
    const before = { signatures: w.signatures.count(), paid: target.paidRequests().length, balance: (await w.get("/v1/balance")).body };
    const answer = await w.post("/v1/pay", { recipient: `${target.url}/paid`, max_amount_usdc: 10_000_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(answer.body.code).toBe("insufficient_balance");
    expect(w.signatures.count()).toBe(before.signatures);
    expect(target.paidRequests().length).toBe(before.paid);
    expect((await w.get("/v1/balance")).body).toEqual(before.balance);
  });

  test("behavior: 8 concurrent payments against a balance for exactly 2 → 2 paid, 6 refused; no other signature reaches the target", async () => {
    const available = (await w.get("/v1/balance")).body.available as number;
    // Free plan: fee 2 %, rounded up. Two payments fit, a third does not.
    const amount = Math.floor(available / 2.5);
    reply = v2PaymentRequired([v2({ amount: String(amount), maxTimeoutSeconds: 2 })]);
    const paid = target.paidRequests().length;
    const answers = await Promise.all(Array.from({ length: 8 }, () => w.post("/v1/pay", { recipient: `${target.url}/paid`, max_amount_usdc: 100_000_000 })));
    const accepted = answers.filter((a) => a.status === 200);
    expect(accepted).toHaveLength(2);
    expect(answers.filter((a) => a.status === 400 && a.body.code === "insufficient_balance")).toHaveLength(6);
    expect(target.paidRequests().length).toBe(paid + 2);
    const after = (await w.get("/v1/balance")).body.available as number;
    expect(after).toBe(available - 2 * (amount + Math.ceil(amount * 0.02)));
    // The target took the signatures and answered 500; unused, they fail and are credited back.
    for (const a of accepted) expect(await w.settle(a.body.id as string)).toBe("failed");
    expect((await w.get("/v1/balance")).body.available).toBe(available);
  });

  test("behavior: with several offers, a refused one does not stop the payable one, and the cheapest payable is signed", async () => {
    reply = v2PaymentRequired([v2({ network: "eip155:1", amount: "1" }), v2({ payTo: addr.wallet, amount: "2" }), v2({ amount: "30000" }), v2({ amount: "20000", maxTimeoutSeconds: 2 })]);
    const signatures = w.signatures.count();
    const answer = await w.post("/v1/pay", { recipient: `${target.url}/paid`, max_amount_usdc: 1_000_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ status: "processing", amount_charged: 20_000 });
    expect(w.signatures.count()).toBe(signatures + 1);
    await w.settle(answer.body.id as string);
  });

  test.each([
    { version: 2, reply: () => v2PaymentRequired([v2({ maxTimeoutSeconds: 2 })]) },
    { version: 1, reply: () => v1PaymentRequired([v1({ maxTimeoutSeconds: 2 })]) },
  ])("behavior: control — the unaltered v$version requirement of the same target is signed and sent", async (c) => {
    reply = c.reply();
    const signatures = w.signatures.count();
    const paid = target.paidRequests().length;
    const answer = await w.post("/v1/pay", { recipient: `${target.url}/paid`, max_amount_usdc: 1_000_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(w.signatures.count()).toBe(signatures + 1);
    expect(target.paidRequests().length).toBe(paid + 1);
    expect(target.paidRequests().at(-1)!.headers[c.version === 2 ? "payment-signature" : "x-payment"]).toBeDefined();
    // The target took the signature and answered 500: unknown, so the chain decides (never settled here).
    expect(answer.body.status).toBe("processing");
    expect(await w.settle(answer.body.id as string)).toBe("failed");
  });
});

function breakChecksum(address: string): string {
  const i = [...address].findIndex((ch, k) => k > 1 && /[a-f]/i.test(ch));
  const ch = address[i]!;
  const flipped = ch === ch.toLowerCase() ? ch.toUpperCase() : ch.toLowerCase();
  const out = address.slice(0, i) + flipped + address.slice(i + 1);
  // Still mixed case (so the checksum applies), and now wrong.
  return out.slice(2) === out.slice(2).toLowerCase() || out.slice(2) === out.slice(2).toUpperCase() ? `${out.slice(0, 3)}${out[3] === "a" ? "A" : "a"}${out.slice(4)}` : out;
}
