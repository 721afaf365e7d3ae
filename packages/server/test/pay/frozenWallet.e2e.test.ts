// Against Circle's own USDC (FiatTokenV2_2 behind its proxy at Base's address, on a real local chain) and
// both ledgers: a deposit address frozen by USDC's blacklister fails its payment with `wallet_frozen`
// (not the generic revert), the balance says the wallet is frozen and offers nothing as `available`,
// new payments are refused at once without a relayer transaction, the operator hears of it (webhook
// event, metric, log), and unblacklisting restores it all. A blacklisted recipient and a paused token
// are named too (`recipient_blocked`, `token_paused`), and in a relayer batch the frozen sender's
// payment fails alone.
import { Balance } from "@agentwallet/api";
import { type DevChain, startDevChain } from "@agentwallet/devchain";
import { type Address, getAddress } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadWebhookSecretKey } from "../../src/masterKeys.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { createToken } from "../../src/services/tokens.ts";
import { createWebhookEndpoint } from "../../src/services/webhooks/endpoints.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { createPgSchema, dialects } from "../support/db.ts";
import { untilFinal } from "../support/holds.ts";
import { poll } from "../support/poll.ts";
import { finishByWorker, heldElsewhere, relayLegs } from "../support/relay.ts";
import { startReceiver } from "../support/webhookReceiver.ts";
import { openPayments } from "../../src/ledger/testing.ts";

const RECIPIENT: Address = getAddress("0x90f79bf6eb2c4f870365e785982e1f101e93b906");

describe.each(dialects)("a wallet frozen by Circle's USDC (%s)", { timeout: 120_000 }, (dialect) => {
  let dev: DevChain;
  let s: TestServer;
  let dropSchema: (() => Promise<void>) | undefined;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let wallet: Address;
  beforeAll(async () => {
    dev = await startDevChain({ usdc: "circle", blockTime: 1, mixedMining: true });
    const pg = dialect === "postgres" ? await createPgSchema() : undefined;
    dropSchema = pg?.drop;
    s = await startTestServer({
      database: dialect,
      databaseUrl: pg?.url,
      env: { RATE_LIMIT_PER_MINUTE: "100000", SANDBOX_CHAIN_RPC_URL: dev.rpcUrl, USDC_ADDRESS: dev.usdcAddress },
    });
    receiver = await startReceiver();
    const ctx = s.server.ctx;
    await createWebhookEndpoint({ ledger: ctx.ledger, clock: systemClock, newId, mode: "sandbox", secretKey: () => loadWebhookSecretKey(ctx.config) }, { projectId: s.projectId, url: receiver.url });
    wallet = (await getDepositAddress(s.server.ctx, s.projectId)).address as Address;
    await s.fund(20_000_000n);
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await receiver?.close();
    await dev?.stop();
    await dropSchema?.();
  });

  const call = async (path: string, body?: unknown, token = s.token) => {
    const res = await fetch(`${s.baseUrl}${path}`, { method: body === undefined ? "GET" : "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const final = (id: string) => untilFinal(s.server.ctx, id);
  const relayerNonce = () => s.server.chain!.client.nonceOf(s.server.chain!.relayerAddress, "pending");
  const balance = async (token = s.token) => Balance.parse((await call("/v1/balance", undefined, token)).json);
  const metrics = async () => (await fetch(`${s.baseUrl}/metrics`)).text();

  test("a payment from a wallet the blacklister froze fails wallet_frozen; the balance says frozen and offers nothing; the next payment is refused at once with no relayer transaction", async () => {
    const before = await balance();
    expect(before).toMatchObject({ frozen: false, available: 20_000_000 });
    await dev.circle!.blacklist(wallet);
    const res = await call("/v1/pay", { recipient: RECIPIENT, amount_usd: 1 });
    expect(res.status).toBe(201);
    const p = await final(res.json.id);
    expect(p).toMatchObject({ status: "failed", failureCode: "wallet_frozen" });
    expect(p.failureReason).toMatch(/frozen|blacklist/i);
    const frozen = await balance();
    expect(frozen).toMatchObject({ frozen: true, available: 0, frozen_amount: 20_000_000 });

    const nonce = await relayerNonce();
    const refused = await call("/v1/pay", { recipient: RECIPIENT, amount_usd: 1 });
    expect(refused.status).toBe(403);
    expect(refused.json).toMatchObject({ code: "wallet_frozen", detail: expect.stringMatching(/frozen/) });
    expect(await relayerNonce()).toBe(nonce);
    expect(await metrics()).toMatch(/agentwallet_frozen_wallets(\{[^}]*\})? 1/);
    await poll("wallet.frozen webhook", async () => receiver.received.find((r) => r.type === "wallet.frozen"));
    expect(receiver.received.find((r) => r.type === "wallet.frozen")!.data).toMatchObject({ project_id: s.projectId, wallet_address: wallet, frozen: true });

    await dev.circle!.unBlacklist(wallet);
    const restored = await poll("the wallet unfrozen", async () => {
      const b = await balance();
      return b.frozen ? undefined : b;
    });
    expect(restored).toMatchObject({ frozen: false, frozen_amount: 0, available: 20_000_000 });
    await poll("wallet.unfrozen webhook", async () => receiver.received.find((r) => r.type === "wallet.unfrozen"));
    expect(await metrics()).toMatch(/agentwallet_frozen_wallets(\{[^}]*\})? 0/);
    const again = await call("/v1/pay", { recipient: RECIPIENT, amount_usd: 1 });
    expect(again.status).toBe(201);
    expect(await final(again.json.id)).toMatchObject({ status: "completed", failureCode: null });
  });

  test("a freeze is seen on-chain before any payment: the wallet shows frozen and payments are refused without a relayer transaction", async () => {
    await dev.circle!.blacklist(wallet);
    await poll("the freeze seen", async () => ((await balance()).frozen ? true : undefined));
    const nonce = await relayerNonce();
    const refused = await call("/v1/pay", { recipient: RECIPIENT, amount_usd: 1 });
    expect(refused).toMatchObject({ status: 403, json: { code: "wallet_frozen" } });
    expect(await relayerNonce()).toBe(nonce);
    await dev.circle!.unBlacklist(wallet);
    await poll("the wallet unfrozen", async () => ((await balance()).frozen ? undefined : true));
  });

  test("a blacklisted recipient fails recipient_blocked and the wallet stays spendable", async () => {
    await dev.circle!.blacklist(RECIPIENT);
    try {
      const res = await call("/v1/pay", { recipient: RECIPIENT, amount_usd: 1 });
      const p = await final(res.json.id);
      expect(p).toMatchObject({ status: "failed", failureCode: "recipient_blocked" });
      expect(p.failureReason).toContain(RECIPIENT);
      expect(await balance()).toMatchObject({ frozen: false });
    } finally {
      await dev.circle!.unBlacklist(RECIPIENT);
    }
  });

  test("a payment while USDC is paused fails token_paused", async () => {
    await dev.circle!.pause();
    try {
      const res = await call("/v1/pay", { recipient: RECIPIENT, amount_usd: 1 });
      const p = await final(res.json.id);
      expect(p).toMatchObject({ status: "failed", failureCode: "token_paused" });
      expect(p.failureReason).toMatch(/paused/);
    } finally {
      await dev.circle!.unpause();
    }
  });

  test("in one relayer batch, the frozen sender's payment fails alone with its code and its batch-mates complete", async () => {
    const ctx = s.server.ctx;
    const other = await ctx.ledger.projects.create({ name: "batch-mate", plan: "free" });
    const { token } = await createToken(ctx, { projectId: other.id, permissions: ["read", "pay"], mode: "test" });
    const otherWallet = (await getDepositAddress(ctx, other.id)).address as Address;
    await dev.mint(otherWallet, 10_000_000n);
    await poll("batch-mate funded", async () => ((await balance(token)).available >= 10_000_000 ? true : undefined));
    // Held under a lease nobody runs and relayed in one turn, so they share one relayer transaction.
    const frozenPay = await heldElsewhere(ctx, s.projectId, RECIPIENT, 1_000_000, "batch-frozen");
    const mates = [await heldElsewhere(ctx, other.id, RECIPIENT, 1_000_000, "batch-mate-1"), await heldElsewhere(ctx, other.id, RECIPIENT, 2_000_000, "batch-mate-2")];
    await dev.circle!.blacklist(wallet);
    try {
      const hashes = await relayLegs(ctx, ctx.rails!.relayer, [frozenPay, ...mates], RECIPIENT);
      expect(new Set(hashes).size).toBe(1);
      const [f, ...done] = await finishByWorker(ctx, [frozenPay.id, ...mates.map((m) => m.id)]);
      expect(f).toMatchObject({ status: "failed", failureCode: "wallet_frozen" });
      for (const m of done) expect(m).toMatchObject({ status: "completed", failureCode: null });
      expect(await balance(token)).toMatchObject({ frozen: false });
    } finally {
      await dev.circle!.unBlacklist(wallet);
    }
    await poll("the wallet unfrozen", async () => ((await balance()).frozen ? undefined : true));
  });

  test("the ledger verifies", async () => {
    await poll("no open payments", async () => ((await openPayments(s.server.ctx.ledger)).length === 0 ? true : undefined));
    expect((await s.server.ctx.ledger.verify()).problems).toEqual([]);
  });
});
