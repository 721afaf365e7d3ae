// The relayer's limit of transactions signed and not yet mined, on the real chain with mining paused:
// past the limit a step waits in the relayer's queue until a block is mined (nothing is signed ahead
// of the chain), and a step that waits too long is handed back to its caller with nothing stored.
import { type Address, createTestClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Relayer, RelayerBusyError, createRelayer } from "../../src/chain/relayer.ts";
import type { Payment } from "../../src/domain/payment.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { finishByWorker, heldElsewhere, relayLegs } from "../support/relay.ts";

const recipient: Address = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955";

describe("relayer: at most maxPendingTxs transactions not yet mined", () => {
  let s: TestServer;
  let anvil: ReturnType<typeof createTestClient>;
  beforeAll(async () => {
    s = await startTestServer();
    await s.fund(10_000_000n);
    anvil = createTestClient({ mode: "anvil", transport: http(s.server.chain!.client.settings.rpcUrl) });
  });
  afterAll(async () => s?.stop());

  const ctx = () => s.server.ctx;
  const chain = () => s.server.chain!;
  const counterKey = () => `relayer_nonce:${chain().relayerAddress.toLowerCase()}`;
  const counter = async () => Number(await ctx().ledger.kv.get(counterKey()));
  const mined = () => chain().client.nonceOf(chain().relayerAddress, "latest");
  const held = (key: string) => heldElsewhere(ctx(), s.projectId, recipient, 10_000, key);
  const step = async (relayer: Relayer, p: Payment) => (await relayLegs(ctx(), relayer, [p], recipient))[0]!;
  const finish = (ids: string[]) => finishByWorker(ctx(), ids);

  /** Blocks only on request: no automatic blocks, no interval blocks. */
  async function pauseMining(): Promise<void> {
    await anvil.setIntervalMining({ interval: 0 });
    await anvil.setAutomine(false);
  }

  test("behavior: past the limit a step waits for a block, then goes out; nothing is signed ahead of the chain", async () => {
    const relayer = createRelayer(ctx().ledger, chain(), ctx().logger, ctx().custody, { maxPendingTxs: 2 });
    const [a, b, c] = [await held("pending-a"), await held("pending-b"), await held("pending-c")];
    await pauseMining();
    try {
      const start = await mined();
      await step(relayer, a);
      await step(relayer, b);
      expect((await counter()) - start).toBe(2);
      let cStored = false;
      const third = step(relayer, c).then((h) => ((cStored = true), h));
      await new Promise((r) => setTimeout(r, 500));
      // Two unmined: the third waits unsigned; its payment row is untouched.
      expect(cStored).toBe(false);
      expect((await ctx().ledger.payments.getPayment(c.id))!.txHash).toBeNull();
      expect((await counter()) - start).toBe(2);
      await anvil.mine({ blocks: 1 });
      const hash = await third;
      expect((await ctx().ledger.payments.getPayment(c.id))!.txHash).toBe(hash);
      expect(await mined()).toBe(start + 2);
      expect(await counter()).toBe(start + 3);
    } finally {
      await anvil.setAutomine(true);
    }
    const final = await finish([a.id, b.id, c.id]);
    expect(final.map((p) => p.status)).toEqual(["completed", "completed", "completed"]);
  });

  test("behavior: a step that waits longer than roomWaitMaxMs is handed back with nothing stored, and completes later", async () => {
    const relayer = createRelayer(ctx().ledger, chain(), ctx().logger, ctx().custody, { maxPendingTxs: 1, roomWaitMaxMs: 300 });
    const [a, b] = [await held("busy-a"), await held("busy-b")];
    await pauseMining();
    try {
      await step(relayer, a);
      const before = await counter();
      await expect(step(relayer, b)).rejects.toBeInstanceOf(RelayerBusyError);
      expect(await counter()).toBe(before);
      const row = (await ctx().ledger.payments.getPayment(b.id))!;
      expect([row.status, row.txHash]).toEqual(["pending", null]);
    } finally {
      await anvil.setAutomine(true);
    }
    const final = await finish([a.id, b.id]);
    expect(final.map((p) => p.status)).toEqual(["completed", "completed"]);
  });

  test("the ledger verifies afterwards", async () => {
    expect((await ctx().ledger.verify()).problems).toEqual([]);
  });
});
