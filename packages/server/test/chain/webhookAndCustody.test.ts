import { randomBytes } from "node:crypto";
import { testUsdcAbi } from "@agentwallet/devchain";
import pino from "pino";
import { Webhook } from "standardwebhooks";
import { type Address, type Hex, createWalletClient, http, parseSignature } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { createDepositWatcher } from "../../src/deposits/watcher.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { startTestChain, type TestChain } from "../support/chain.ts";
import { depositRows } from "../../src/ledger/testing.ts";

const SECRET = `whsec_${randomBytes(24).toString("base64")}`;

describe("deposit webhook: a verified hint, never a credit on its own word", () => {
  let t: TestContext;
  let chain: TestChain;
  let app: ReturnType<typeof buildApp>;
  beforeAll(async () => {
    [t, chain] = await Promise.all([createTestContext("sqlite", { env: { DEPOSIT_WEBHOOK_SECRET: SECRET } }), startTestChain()]);
    const watcher = createDepositWatcher(t.ctx.ledger, chain.client, pino({ level: "silent" }), { chainName: "base", confirmations: 2, maxBlocksPerScan: 1000, startBlock: () => 0 });
    t.ctx.hooks.depositHint = async (h) => void (await watcher.checkTransaction(h as Hex));
    app = buildApp(t.ctx);
  });
  afterAll(async () => {
    await app?.close();
    await chain?.stop();
    await t?.close();
  });

  function signed(body: unknown, opts: { id?: string; at?: Date; secret?: string } = {}) {
    const payload = JSON.stringify(body);
    const id = opts.id ?? `msg_${randomBytes(8).toString("hex")}`;
    const at = opts.at ?? new Date();
    const signature = new Webhook(opts.secret ?? SECRET).sign(id, at, payload);
    return { method: "POST" as const, url: "/v1/webhooks/deposits", payload, headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": signature } };
  }

  test("a hint for a real, confirmed transfer credits it (once); a replayed id is refused", async () => {
    const p = await projectWithToken(t.ctx);
    const { address } = await getDepositAddress(t.ctx, p.project.id);
    const hash = await chain.dev.mint(address as Address, 4_200_000n);
    await chain.mine(2);
    const req = signed({ type: "deposit.confirmed", data: { chain: "base", tx_hash: hash } });
    const res = await app.inject(req);
    expect(res.statusCode).toBe(202);
    expect((await t.ctx.ledger.balances.get(p.project.id))!.available_micros).toBe(4_200_000);
    const replay = await app.inject(req);
    expect(replay.statusCode).toBe(409);
    expect(replay.json().detail).toMatch(/already processed/);
    const again = await app.inject(signed({ type: "deposit.confirmed", data: { tx_hash: hash } }));
    expect(again.statusCode).toBe(202);
    expect((await t.ctx.ledger.balances.get(p.project.id))!.available_micros).toBe(4_200_000);
  });

  test("a hint for a transfer that is not on-chain credits nothing", async () => {
    const before = await depositRows(t.ctx.ledger);
    const res = await app.inject(signed({ type: "deposit.confirmed", data: { tx_hash: `0x${"ab".repeat(32)}` } }));
    expect(res.statusCode).toBe(202);
    expect(await depositRows(t.ctx.ledger)).toEqual(before);
  });

  test.each([
    ["bad signature", () => signed({ type: "x", data: { tx_hash: `0x${"cd".repeat(32)}` } }, { secret: `whsec_${randomBytes(24).toString("base64")}` }), 401],
    ["stale timestamp", () => signed({ type: "x", data: { tx_hash: `0x${"cd".repeat(32)}` } }, { at: new Date(Date.now() - 6 * 60_000) }), 401],
    ["future timestamp", () => signed({ type: "x", data: { tx_hash: `0x${"cd".repeat(32)}` } }, { at: new Date(Date.now() + 6 * 60_000) }), 401],
    ["malformed body", () => signed({ type: "x", data: { tx_hash: "not-a-hash" } }), 400],
    ["no signature headers", () => ({ method: "POST" as const, url: "/v1/webhooks/deposits", payload: "{}", headers: { "content-type": "application/json" } }), 401],
  ])("%s → 4xx {detail} and no credit", async (_name, make, status) => {
    const before = await depositRows(t.ctx.ledger);
    const res = await app.inject(make());
    expect(res.statusCode).toBe(status);
    expect(typeof res.json().detail).toBe("string");
    expect(await depositRows(t.ctx.ledger)).toEqual(before);
  });
});

describe("custody: derived project keys sign EIP-3009 authorizations the token honours", () => {
  let t: TestContext;
  let chain: TestChain;
  beforeAll(async () => {
    [t, chain] = await Promise.all([createTestContext("sqlite"), startTestChain()]);
  });
  afterAll(async () => {
    await chain?.stop();
    await t?.close();
  });

  test("transferWithAuthorization signed by a project wallet moves USDC; a reused nonce is rejected", async () => {
    const p = await projectWithToken(t.ctx);
    const project = (await t.ctx.ledger.projects.get(p.project.id))!;
    const from = (await getDepositAddress(t.ctx, p.project.id)).address as Address;
    expect(from).toBe(t.ctx.custody.addressOf(project.wallet_index));
    await chain.dev.mint(from, 10_000_000n);
    const signer = t.ctx.custody.signerFor(project.wallet_index);
    const to = chain.dev.accounts.merchant.address;
    const nonce = `0x${randomBytes(32).toString("hex")}` as Hex;
    const message = { from, to, value: 3_000_000n, validAfter: 0n, validBefore: BigInt(Math.floor(Date.now() / 1000) + 600), nonce };
    const signature = await signer.signTypedData({
      domain: { name: "USD Coin", version: "2", chainId: chain.dev.chainId, verifyingContract: chain.dev.usdcAddress },
      types: { TransferWithAuthorization: [{ name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" }, { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" }] },
      primaryType: "TransferWithAuthorization",
      message,
    } as never);
    const { v, r, s } = parseSignature(signature);
    const relayer = createWalletClient({ account: (await import("viem/accounts")).privateKeyToAccount(chain.dev.accounts.relayer.privateKey), chain: chain.client.chain, transport: http(chain.dev.rpcUrl) });
    const args = [message.from, message.to, message.value, message.validAfter, message.validBefore, message.nonce, Number(v), r, s] as const;
    const hash = await relayer.writeContract({ address: chain.dev.usdcAddress, abi: testUsdcAbi, functionName: "transferWithAuthorization", args: args as never });
    await chain.client.client.waitForTransactionReceipt({ hash });
    expect(await chain.client.usdcBalance(to)).toBe(3_000_000n);
    expect(await chain.client.usdcBalance(from)).toBe(7_000_000n);
    expect(await chain.client.authorizationUsed(from, nonce)).toBe(true);
    await expect(chain.client.client.simulateContract({ account: relayer.account, address: chain.dev.usdcAddress, abi: testUsdcAbi, functionName: "transferWithAuthorization", args: args as never })).rejects.toThrow(/authorization is used/);
  });
});

describe("live mode refuses to start without its settings", () => {
  test.each([
    [{ BASE_RPC_URL: "https://rpc.example" }, /AGENTWALLET_MASTER_MNEMONIC or AGENTWALLET_MASTER_MNEMONIC_FILE/],
    [{ BASE_RPC_URL: "https://rpc.example", AGENTWALLET_MASTER_MNEMONIC: "x", TREASURY_ADDRESS: "0x1" }, /RELAYER_PRIVATE_KEY/],
    [{ BASE_RPC_URL: "https://rpc.example", AGENTWALLET_MASTER_MNEMONIC: "x", RELAYER_PRIVATE_KEY: "0x1" }, /TREASURY_ADDRESS/],
    [{ BASE_RPC_URL: "https://rpc.example", AGENTWALLET_MASTER_MNEMONIC: "x", RELAYER_PRIVATE_KEY: "0x1", TREASURY_ADDRESS: "0x1", X402_ALLOW_PRIVATE_NETWORKS: "1" }, /live mode refuses/],
  ])("%o", (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });
});
