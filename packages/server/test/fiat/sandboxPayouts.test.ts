import { startDevChain, type DevChain } from "@agentwallet/devchain";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Hex } from "viem";
import { type ChainClient, createChainClient } from "../../src/chain/chainClient.ts";
import { SANDBOX_FAIL_ACCOUNT, createSandboxFiatProvider } from "../../src/rails/fiat/sandboxProvider.ts";
import { createTestContext, type TestContext } from "../support/context.ts";

const recipient = { name: "Acme", account_number: "000123456789", routing_number: "021000021" };

describe("sandbox off-ramp: payouts move forward and refunds are sent once", () => {
  let dev: DevChain;
  let t: TestContext;
  beforeAll(async () => {
    dev = await startDevChain();
    t = await createTestContext("sqlite");
  });
  afterAll(async () => {
    await t?.close();
    await dev?.stop();
  });

  test("behavior: with more payouts than a tick reads, every payout completes after enough ticks", async () => {
    // A tick reads 3 payouts here (1,000 in the service): the 4th to the 7th were never reached before,
    // as the same first rows were read on every tick, and their payments stayed processing for good.
    const provider = createSandboxFiatProvider({
      ledger: t.ctx.ledger,
      chain: createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 }),
      privateKey: dev.accounts.offramp.privateKey,
      webhookSecret: "",
      delayMs: 0,
      logger: pino({ level: "silent" }),
      payoutsPerTick: 3,
    });
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) {
      const payout = await provider.createPayout({ reference: `pay_${i}`, amountCents: 100 + i, recipient, refundAddress: dev.accounts.treasury.address });
      ids.push(payout.payoutId);
    }
    // Three ticks cover seven payouts three at a time; a fourth starts over and finds nothing left to do.
    for (let i = 0; i < 4; i++) await provider.tick();
    const statuses = await Promise.all(ids.map(async (id) => (await provider.getPayout(id))?.status));
    expect(statuses).toEqual(Array(7).fill("completed"));
  });

  test("defect: a refund mined between the provider's two reads of the chain is not sent a second time", async () => {
    // Seen under load: the first try's receipt wait gave up while the refund was still on its way; the next
    // try read no receipt, then the refund was mined, then it read the sender's nonce past the refund's and
    // took the refund for replaced: it signed another, and the project was refunded twice.
    const rpc = async (method: string, params: unknown[] = []) => {
      const res = await fetch(dev.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      return ((await res.json()) as { result: unknown }).result;
    };
    const real = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 });
    const refundTo = `0x${"5e".repeat(20)}` as const;
    let mineAfterNextMiss = false;
    // The real chain; only the moment the node mines is chosen: right after a receipt read that found nothing.
    const chain: ChainClient = {
      ...real,
      async receipt(hash: Hex) {
        const r = await real.receipt(hash);
        if (!r && mineAfterNextMiss) {
          mineAfterNextMiss = false;
          await rpc("evm_mine");
        }
        return r;
      },
    };
    const provider = createSandboxFiatProvider({ ledger: t.ctx.ledger, chain, privateKey: dev.accounts.offramp.privateKey, webhookSecret: "", delayMs: 0, logger: pino({ level: "silent" }), refundWaitMs: 300 });
    await dev.mint(dev.accounts.offramp.address, 5_000_000n);
    const payout = await provider.createPayout({ reference: "pay_refund_race", amountCents: 250, recipient: { ...recipient, account_number: SANDBOX_FAIL_ACCOUNT }, refundAddress: refundTo });
    await rpc("evm_setAutomine", [false]);
    try {
      // First try: the refund is signed, stored and sent, but not mined before the wait gives up.
      await provider.tick();
      expect((await provider.getPayout(payout.payoutId))?.status).toBe("processing");
      // Second try: the node mines it between the reads.
      mineAfterNextMiss = true;
      await provider.tick();
      await rpc("evm_setAutomine", [true]);
      for (let i = 0; i < 3; i++) await provider.tick();
    } finally {
      await rpc("evm_setAutomine", [true]);
    }
    expect((await provider.getPayout(payout.payoutId))?.status).toBe("failed");
    expect(await real.usdcBalance(refundTo)).toBe(2_500_000n);
  });

  test("defect: a payout asked for twice at once (a retry racing the first try) is one payout, refunded once", async () => {
    // Seen in the fault suite: the off-ramp stored the payout, then its reference, in two writes; a try that
    // read no reference before the other stored it (or ran after a kill -9 between the two writes) made a
    // second payout for the same payment, and a failing payout was then refunded once for each.
    const real = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 });
    const provider = createSandboxFiatProvider({ ledger: t.ctx.ledger, chain: real, privateKey: dev.accounts.offramp.privateKey, webhookSecret: "", delayMs: 0, logger: pino({ level: "silent" }) });
    const refundTo = `0x${"5f".repeat(20)}` as const;
    await dev.mint(dev.accounts.offramp.address, 5_000_000n);
    const req = { reference: "pay_asked_twice", amountCents: 175, recipient: { ...recipient, account_number: SANDBOX_FAIL_ACCOUNT }, refundAddress: refundTo };
    const [a, b] = await Promise.all([provider.createPayout(req), provider.createPayout(req)]);
    expect(b.payoutId).toBe(a.payoutId);
    for (let i = 0; i < 3; i++) await provider.tick();
    expect((await provider.getPayout(a.payoutId))?.status).toBe("failed");
    expect(await real.usdcBalance(refundTo)).toBe(1_750_000n);
  });
});
