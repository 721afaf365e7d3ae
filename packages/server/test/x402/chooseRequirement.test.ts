// The judge of payment requirements, without I/O: what is payable, what is refused and why, and which
// offer is chosen among several. Property tests hold the amount rule against arbitrary strings.
import fc from "fast-check";
import type { PaymentRequired } from "@x402/core/types";
import { expect, test } from "vitest";
import { type RequirementPolicy, chooseRequirement, judgeRequirement } from "../../src/rails/x402/chooseRequirement.ts";
import { randomAddress } from "./support/x402World.ts";
import type { DomainError } from "../../src/domain/errors.ts";
import { statusOf } from "../../src/http/errorStatus.ts";

const usdc = randomAddress();
const own = randomAddress();
const projectWallet = randomAddress();
const policy: RequirementPolicy = {
  v2Network: "eip155:8453",
  v1Network: "base",
  usdcAddress: usdc,
  eip712: { name: "USD Coin", version: "2" },
  maxTimeoutSeconds: 600,
  amountMicrosMax: 100_000_000,
  ownAddresses: new Set([own.toLowerCase(), usdc.toLowerCase()]),
  isProjectWallet: async (a) => a === projectWallet,
};
const payTo = randomAddress();
const v2 = (patch: Record<string, unknown> = {}) => ({ scheme: "exact", network: "eip155:8453", amount: "10000", asset: usdc, payTo, maxTimeoutSeconds: 60, extra: { name: "USD Coin", version: "2" }, ...patch });
const required = (accepts: unknown[], x402Version = 2) => ({ x402Version, resource: { url: "https://x.test" }, accepts }) as unknown as PaymentRequired;

test("default: an exact v2 requirement in our USDC is payable for its amount", () => {
  expect(judgeRequirement(v2(), 2, policy)).toEqual({ ok: true, chosen: { raw: v2(), x402Version: 2, network: "eip155:8453", payTo, amountMicros: 10_000, maxTimeoutSeconds: 60 } });
});

test("behavior: v1 reads maxAmountRequired on network base", () => {
  const r = { ...v2({ network: "base" }), maxAmountRequired: "25000", amount: undefined };
  expect(judgeRequirement(r, 1, policy)).toMatchObject({ ok: true, chosen: { amountMicros: 25_000, x402Version: 1 } });
});

test("behavior: addresses are compared without regard to case, and payTo is returned checksummed", () => {
  const j = judgeRequirement(v2({ asset: usdc.toLowerCase(), payTo: payTo.toLowerCase() }), 2, policy);
  expect(j).toMatchObject({ ok: true, chosen: { payTo } });
  expect(judgeRequirement(v2({ payTo: own.toUpperCase().replace("0X", "0x") }), 2, policy)).toMatchObject({ ok: false, refusal: { code: "x402_pay_to_own_wallet" } });
});

test("behavior: only canonical decimal integers from 1 to the cap are amounts", () => {
  fc.assert(
    fc.property(fc.string({ maxLength: 24 }), (amount) => {
      const j = judgeRequirement(v2({ amount }), 2, policy);
      const canonical = /^[1-9][0-9]*$/.test(amount) && BigInt(amount) <= 100_000_000n;
      return j.ok === canonical && (!j.ok || j.chosen.amountMicros === Number(amount));
    }),
    { numRuns: 2_000 },
  );
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 100_000_000 }), (n) => {
      const j = judgeRequirement(v2({ amount: String(n) }), 2, policy);
      return j.ok && j.chosen.amountMicros === n;
    }),
  );
});

test("behavior: a requirement that is not exact on our network is 'unsupported', not judged further", () => {
  expect(judgeRequirement(v2({ network: "eip155:1", amount: "junk" }), 2, policy)).toMatchObject({ ok: false, supported: false, refusal: { code: "x402_no_supported_requirement" } });
  expect(judgeRequirement("not an object", 2, policy)).toMatchObject({ ok: false, supported: false });
});

test("behavior: the cheapest payable offer wins; refused and unsupported ones are skipped", async () => {
  const accepts = [v2({ network: "eip155:1", amount: "1" }), v2({ asset: randomAddress(), amount: "2" }), v2({ amount: "9000" }), v2({ amount: "7000", payTo: projectWallet }), v2({ amount: "8000" })];
  const chosen = await chooseRequirement(required(accepts), policy, 1_000_000);
  expect(chosen.amountMicros).toBe(8_000);
  expect(chosen.raw).toBe(accepts[4]);
});

/** The HTTP status the refusal gets: the rail names a kind, the HTTP layer its status. */
const statusOfRefusal = (err: unknown) => statusOf(err as DomainError);

test("error: when nothing is payable, the first judged reason is reported", async () => {
  const first = await chooseRequirement(required([v2({ network: "eip155:1" }), v2({ maxTimeoutSeconds: 601 }), v2({ asset: randomAddress() })]), policy, 1_000_000).catch((e: unknown) => e);
  expect(first).toMatchObject({ code: "x402_max_timeout_invalid" });
  expect(statusOfRefusal(first)).toBe(400);
  await expect(chooseRequirement(required([v2({ payTo: projectWallet })]), policy, 1_000_000)).rejects.toMatchObject({ code: "x402_pay_to_own_wallet" });
});

test("error: with no exact offer on our network, the refusal lists what was offered", async () => {
  const err = await chooseRequirement(required([v2({ scheme: "upto" }), v2({ network: "solana:mainnet" })]), policy, 1_000_000).catch((e: unknown) => e);
  expect(err).toMatchObject({ code: "x402_no_supported_requirement" });
  expect(statusOfRefusal(err)).toBe(400);
  expect((err as Error).message).toContain('"upto" on "eip155:8453"');
  expect((err as Error).message).toContain('"exact" on "solana:mainnet"');
});

test("error: the price cap applies to the cheapest payable offer", async () => {
  const accepts = [v2({ amount: "20000" }), v2({ amount: "15000" })];
  const capped = await chooseRequirement(required(accepts), policy, 14_999).catch((e: unknown) => e);
  expect(capped).toMatchObject({ code: "x402_price_above_max" });
  expect(statusOfRefusal(capped)).toBe(400);
  expect((await chooseRequirement(required(accepts), policy, 15_000)).amountMicros).toBe(15_000);
});

test("error: details quote what the target sent, shortened, so a hostile value cannot flood the answer", () => {
  const j = judgeRequirement(v2({ amount: "9".repeat(5_000) }), 2, policy);
  expect(j.ok).toBe(false);
  if (!j.ok) expect(j.refusal.detail.length).toBeLessThan(300);
});
