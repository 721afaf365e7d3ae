// The Machine Payments Protocol's EVM charge, against mppx's own server on the local chain: a challenge is
// read and judged, the project wallet's EIP-3009 authorization (nonce = the challenge's hash) is sent as
// mppx's credential, and the merchant settles it on-chain and answers with a receipt. Hostile challenges are
// refused before anything is signed, with the codes x402 requirements are refused with.
import { type DevChain, type MppMerchant, startDevChain, startMppMerchant, usdcBalanceOf } from "@agentwallet/devchain";
import { Challenge, evm } from "mppx";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createHdCustody } from "../../src/chain/custody.ts";
import { randomNonce, signAuthorization } from "../../src/rails/eip3009.ts";
import { type MppPolicy, chooseMppChallenge, judgeMppChallenge, mppCredential, offersMpp, readMppChallenges, readMppReceipt } from "../../src/rails/x402/mppChallenge.ts";
import { TEST_MNEMONIC } from "../support/context.ts";

const PRICE = 10_000n;
const headersOf = (r: Response) => Object.fromEntries([...r.headers.entries()].map(([k, v]) => [k.toLowerCase(), v]));
const codeOf = (p: Promise<unknown>) => p.then(() => "paid", (e: { code?: string }) => e.code ?? String(e));

describe("MPP's EVM charge against mppx's server", () => {
  let dev: DevChain;
  let merchant: MppMerchant;
  let both: MppMerchant;
  let policy: MppPolicy;
  const custody = createHdCustody(TEST_MNEMONIC);
  const payTo = "0x00000000000000000000000000000000000a11ce" as Address;
  beforeAll(async () => {
    dev = await startDevChain();
    const common = { rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, payTo, priceMicros: PRICE, settlerKey: dev.accounts.facilitator.privateKey };
    merchant = await startMppMerchant(common);
    both = await startMppMerchant({ ...common, offers: "both" });
    await dev.mint(custody.addressOf(7), 1_000_000n);
    policy = { chainId: dev.chainId, usdcAddress: dev.usdcAddress, maxTimeoutSeconds: 600, amountMicrosMax: 100_000_000, ownAddresses: new Set([custody.addressOf(7).toLowerCase()]), isProjectWallet: async () => false };
  });
  afterAll(async () => {
    await merchant?.stop();
    await both?.stop();
    await dev?.stop();
  });

  test("a challenge is paid once: the credential carries the authorization, the merchant settles it on-chain and sends its receipt", async () => {
    const first = await fetch(`${merchant.url}/paid`);
    expect(first.status).toBe(402);
    const headers = headersOf(first);
    expect(offersMpp(headers)).toBe(true);
    expect(headers["payment-required"]).toBeUndefined();
    const chosen = await chooseMppChallenge(readMppChallenges(headers), policy, 1_000_000, Date.now());
    expect(chosen).toMatchObject({ payTo: payTo.replace("a11ce", "A11cE"), amountMicros: Number(PRICE) });
    const auth = await signAuthorization(custody, 7, { chainId: dev.chainId, usdc: dev.usdcAddress, to: chosen.payTo, valueMicros: chosen.amountMicros, validAfter: 0, validBefore: chosen.validBefore, nonce: chosen.nonce });
    const credential = mppCredential(chosen, auth, dev.chainId);
    expect(credential.startsWith("Payment ")).toBe(true);
    const paid = await fetch(`${merchant.url}/paid`, { headers: { authorization: credential } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ paid: true, method: "GET" });
    const receipt = readMppReceipt(headersOf(paid));
    expect(receipt).toMatchObject({ status: "success", method: "evm" });
    expect(merchant.settled()).toEqual([receipt!.reference]);
    expect(await usdcBalanceOf(dev.rpcUrl, dev.usdcAddress, payTo)).toBe(PRICE);
    // The same credential again moves nothing more: its authorization is spent on-chain.
    const again = await fetch(`${merchant.url}/paid`, { headers: { authorization: credential } });
    expect(again.status).not.toBe(200);
    expect(await usdcBalanceOf(dev.rpcUrl, dev.usdcAddress, payTo)).toBe(PRICE);
  });

  test("an authorization for another amount, recipient or nonce is never turned into a credential", async () => {
    const chosen = await chooseMppChallenge(readMppChallenges(headersOf(await fetch(`${merchant.url}/paid`))), policy, 1_000_000, Date.now());
    const sign = (o: Partial<{ to: Address; valueMicros: number; nonce: `0x${string}` }>) =>
      signAuthorization(custody, 7, { chainId: dev.chainId, usdc: dev.usdcAddress, to: chosen.payTo, valueMicros: chosen.amountMicros, validAfter: 0, validBefore: chosen.validBefore, nonce: chosen.nonce, ...o });
    for (const bad of [await sign({ valueMicros: chosen.amountMicros + 1 }), await sign({ to: dev.accounts.treasury.address }), await sign({ nonce: randomNonce() })]) {
      expect(() => mppCredential(chosen, bad, dev.chainId)).toThrow("does not pay the chosen challenge");
    }
  });

  test("a route that offers both protocols is read as MPP too (the caller's choice decides which one pays)", async () => {
    const headers = headersOf(await fetch(`${both.url}/paid`));
    expect(offersMpp(headers)).toBe(true);
    expect(headers["payment-required"]).toBeTruthy();
  });

  test("error: hostile challenges are refused before anything is signed", async () => {
    const good = readMppChallenges(headersOf(await fetch(`${merchant.url}/paid`)))[0]!;
    const req = good.request as Record<string, unknown>;
    const details = req.methodDetails as Record<string, unknown>;
    const variant = (c: Partial<Challenge.Challenge>, request: Record<string, unknown> = {}, methodDetails: Record<string, unknown> = {}) =>
      ({ ...good, ...c, request: { ...req, ...request, methodDetails: { ...details, ...methodDetails } } }) as Challenge.Challenge;
    const now = Date.now();
    const cases: [string, Challenge.Challenge, string][] = [
      ["another method", variant({ method: "tempo" }), "x402_no_supported_requirement"],
      ["another intent", variant({ intent: "session" }), "x402_no_supported_requirement"],
      ["another chain", variant({}, {}, { chainId: 1 }), "x402_no_supported_requirement"],
      ["another asset", variant({}, { currency: dev.accounts.treasury.address }), "x402_asset_not_allowed"],
      ["other decimals", variant({}, {}, { decimals: 18 }), "x402_asset_not_allowed"],
      ["zero amount", variant({}, { amount: "0" }), "x402_amount_invalid"],
      ["amount with a fraction", variant({}, { amount: "1.5" }), "x402_amount_invalid"],
      ["amount above the cap", variant({}, { amount: "100000001" }), "x402_amount_invalid"],
      ["splits", variant({}, {}, { splits: [{ amount: "1", recipient: payTo }] }), "x402_transfer_method_unsupported"],
      ["another credential type", variant({}, {}, { credentialTypes: ["permit2"] }), "x402_transfer_method_unsupported"],
      ["zero recipient", variant({}, { recipient: `0x${"0".repeat(40)}` }), "x402_pay_to_invalid"],
      ["our own wallet", variant({}, { recipient: custody.addressOf(7) }), "x402_pay_to_own_wallet"],
      ["expired", variant({ expires: new Date(now - 1_000).toISOString() }), "mpp_challenge_invalid"],
      ["an expiry that is not a date", variant({ expires: "soon" }), "mpp_challenge_invalid"],
    ];
    for (const [name, challenge, code] of cases) {
      const judged = judgeMppChallenge(challenge, policy, now);
      expect(judged.ok, name).toBe(false);
      expect(await codeOf(chooseMppChallenge([challenge], policy, 1_000_000, now)), name).toBe(code);
    }
    expect(await codeOf(chooseMppChallenge([good], policy, Number(PRICE) - 1, now))).toBe("x402_price_above_max");
    expect(await codeOf(chooseMppChallenge([good], { ...policy, isProjectWallet: async () => true }, 1_000_000, now))).toBe("x402_pay_to_own_wallet");
    // A far expiry is cut to our bound; a near one is kept.
    const far = judgeMppChallenge(variant({ expires: new Date(now + 3_600_000).toISOString() }), policy, now);
    expect(far.ok && far.chosen.validBefore).toBe(Math.floor(now / 1000) + 600);
    expect(() => readMppChallenges({ "www-authenticate": "Payment id=" })).toThrow(expect.objectContaining({ code: "mpp_challenge_invalid" }));
    expect(() => readMppChallenges({ "www-authenticate": `Payment ${"x".repeat(20_000)}` })).toThrow(expect.objectContaining({ code: "mpp_challenge_invalid" }));
    expect(offersMpp({ "www-authenticate": 'Bearer realm="x"' })).toBe(false);
    expect(evm.challengeHash(good)).toMatch(/^0x[0-9a-f]{64}$/);
  });
});
