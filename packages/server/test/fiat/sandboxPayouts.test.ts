import { startDevChain, type DevChain } from "@agentwallet/devchain";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createChainClient } from "../../src/chain/chainClient.ts";
import { createSandboxFiatProvider } from "../../src/rails/fiat/sandboxProvider.ts";
import { createTestContext, type TestContext } from "../support/context.ts";

const recipient = { name: "Acme", account_number: "000123456789", routing_number: "021000021" };

describe("sandbox off-ramp: payouts move forward however many there are", () => {
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
});
