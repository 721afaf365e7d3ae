import { Balance, TransactionList } from "@agentwallet/api";
import pino from "pino";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createDepositWatcher } from "../../src/deposits/watcher.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { startTestChain, type TestChain } from "../support/chain.ts";
import { dialects } from "../support/db.ts";
import { depositRows } from "../../src/ledger/testing.ts";

const CONFIRMATIONS = 2;
const silent = pino({ level: "silent" });

describe.each(dialects)("deposit watcher on anvil (%s)", (dialect) => {
  let t: TestContext;
  let chain: TestChain;
  beforeAll(async () => {
    [t, chain] = await Promise.all([createTestContext(dialect), startTestChain()]);
  });
  afterAll(async () => {
    await chain?.stop();
    await t?.close();
  });

  const newWatcher = () =>
    createDepositWatcher(t.ctx.ledger, chain.client, silent, { chainName: "base", confirmations: CONFIRMATIONS, maxBlocksPerScan: 7, startBlock: () => 0 });

  test("a deposit is pending first, then available after confirmations; amounts match the chain exactly", async () => {
    const app = buildApp(t.ctx);
    const p = await projectWithToken(t.ctx);
    const { address } = await getDepositAddress(t.ctx, p.project.id);
    const watcher = newWatcher();
    await watcher.tick();
    const hash = await chain.dev.mint(address as Address, 12_345_678n);
    let r = await watcher.tick();
    while (r.scannedTo < r.head) r = await watcher.tick(); // catch up in bounded ranges
    const auth = { authorization: `Bearer ${p.token}` };
    const pending = Balance.parse((await app.inject({ url: "/v1/balance", headers: auth })).json());
    expect(pending).toMatchObject({ available: 0, pending: 12_345_678, total_funded: 0 });
    await chain.mine(1);
    await watcher.tick();
    const done = Balance.parse((await app.inject({ url: "/v1/balance", headers: auth })).json());
    expect(done).toMatchObject({ available: 12_345_678, pending: 0, total_funded: 12_345_678 });
    expect(await chain.client.usdcBalance(address as Address)).toBe(12_345_678n);
    const list = TransactionList.parse((await app.inject({ url: "/v1/transactions", headers: auth })).json());
    expect(list.transactions).toHaveLength(1);
    expect(list.transactions[0]).toMatchObject({ type: "usdc_fund", status: "completed", amount: 12_345_678, currency: "usdc" });
    expect(list.transactions[0]!.completed_at).not.toBeNull();
    const row = (await depositRows(t.ctx.ledger, { txHash: hash }))[0]!;
    expect(row.status).toBe("credited");
    await app.close();
  });

  test("50 deposits across 5 projects in mixed blocks are each credited once; a restarted watcher credits nothing twice", async () => {
    const projects = await Promise.all(Array.from({ length: 5 }, () => projectWithToken(t.ctx)));
    const addresses = await Promise.all(projects.map(async (p) => (await getDepositAddress(t.ctx, p.project.id)).address as Address));
    const expected = new Map<string, bigint>();
    const before = await Promise.all(projects.map((p) => t.ctx.ledger.balances.get(p.project.id)));
    let watcher = newWatcher();
    for (let i = 0; i < 50; i++) {
      const k = i % 5;
      const amount = BigInt(1_000_000 + i * 1_001);
      await chain.dev.mint(addresses[k]!, amount);
      expected.set(projects[k]!.project.id, (expected.get(projects[k]!.project.id) ?? 0n) + amount);
      if (i % 7 === 3) await chain.mine(i % 3); // empty blocks between some deposits
      if (i === 20) await watcher.tick(); // part-way scan…
      if (i === 21) watcher = newWatcher(); // …then a "restart" that reads the persisted cursor
    }
    await chain.mine(CONFIRMATIONS);
    for (let i = 0; i < 30; i++) {
      const r = await watcher.tick();
      if (r.scannedTo >= r.head) break;
    }
    // A second watcher and a full rescan from genesis must change nothing.
    await t.ctx.ledger.kv.set("deposits:cursor:base", "-1");
    const again = newWatcher();
    for (let i = 0; i < 40; i++) {
      const r = await again.tick();
      expect(r.credited).toBe(0);
      if (r.scannedTo >= r.head) break;
    }
    for (let k = 0; k < 5; k++) {
      const b = (await t.ctx.ledger.balances.get(projects[k]!.project.id))!;
      expect(b.available_micros - before[k]!.available_micros).toBe(Number(expected.get(projects[k]!.project.id)));
      expect(b.pending_micros).toBe(0);
      expect(BigInt(b.available_micros)).toBe(await chain.client.usdcBalance(addresses[k]!));
    }
    const credited = await depositRows(t.ctx.ledger, { status: "credited", projectId: projects.map((p) => p.project.id) });
    expect(credited.length).toBe(50);
    expect((await t.ctx.ledger.verify()).problems).toEqual([]);
  });

  test("a transfer that disappears before confirmation (reorg) leaves no credit", async () => {
    const p = await projectWithToken(t.ctx);
    const { address } = await getDepositAddress(t.ctx, p.project.id);
    const watcher = newWatcher();
    for (let i = 0; i < 40; i++) if ((await watcher.tick()).scannedTo >= (await chain.client.blockNumber())) break;
    const snap = await chain.snapshot();
    await chain.dev.mint(address as Address, 777_000n);
    await watcher.tick();
    expect((await t.ctx.ledger.balances.get(p.project.id))!.pending_micros).toBe(777_000);
    await chain.revert(snap); // the block with the transfer is gone
    await chain.mine(CONFIRMATIONS + 1);
    await watcher.tick();
    const b = (await t.ctx.ledger.balances.get(p.project.id))!;
    expect(b).toMatchObject({ available_micros: 0, pending_micros: 0, total_funded_micros: 0 });
    expect((await t.ctx.ledger.verify()).problems).toEqual([]);
  });

  test("after a rollback deeper than the confirmations, a deposit in a block the cursor had passed is credited", async () => {
    // A chain of its own: the test's minter must not have sent from a branch reverted before it (its client
    // numbers its transactions on from the branch it last saw).
    const own = await startTestChain();
    try {
      const p = await projectWithToken(t.ctx);
      const { address } = await getDepositAddress(t.ctx, p.project.id);
      const watcher = () => createDepositWatcher(t.ctx.ledger, own.client, silent, { chainName: "base-rollback", confirmations: CONFIRMATIONS, maxBlocksPerScan: 7, startBlock: () => 0 });
      const snap = await own.snapshot();
      // The chain grows well past the confirmations and the watcher follows it.
      await own.mine(CONFIRMATIONS + 10);
      for (let i = 0; i < 40; i++) if ((await watcher().tick()).scannedTo >= (await own.client.blockNumber())) break;
      const passed = await own.client.blockNumber();
      // The chain goes back to before those blocks; a deposit lands at a height the cursor had already passed.
      await own.revert(snap);
      const hash = await own.dev.mint(address as Address, 424_242n);
      await own.mine(CONFIRMATIONS);
      expect(Number((await own.client.receipt(hash))!.blockNumber)).toBeLessThan(passed - CONFIRMATIONS);
      for (let i = 0; i < 10; i++) await watcher().tick();
      expect((await t.ctx.ledger.balances.get(p.project.id))!).toMatchObject({ available_micros: 424_242, total_funded_micros: 424_242 });
      // Ticks on the same cursor credit nothing twice.
      for (let i = 0; i < 5; i++) await watcher().tick();
      expect((await t.ctx.ledger.balances.get(p.project.id))!.total_funded_micros).toBe(424_242);
      expect((await t.ctx.ledger.verify()).problems).toEqual([]);
    } finally {
      await own.stop();
    }
  });
});
