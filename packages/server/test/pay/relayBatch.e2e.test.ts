// Relayer batching on the real chain: payments stepped together share one relayer transaction (one
// nonce, one commit, one broadcast), each payment's transfers move all or none, and a payment whose
// transfers cannot move fails alone and is credited back while the others in its transaction complete.
import { devAccounts } from "@agentwallet/devchain";
import { type Address, createPublicClient, createWalletClient, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { MAX_BATCH_PAYMENTS } from "../../src/chain/relayer.ts";
import type { Payment } from "../../src/domain/payment.ts";
import { randomNonce, signAuthorization } from "../../src/rails/eip3009.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { finishByWorker, heldElsewhere, relayLegs } from "../support/relay.ts";
import { putKv, relayerTxs } from "../../src/ledger/testing.ts";

const recipient: Address = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955";

describe("relayer batching: many payments in one relayer transaction, each with its own outcome", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
    await s.fund(20_000_000n);
  });
  afterAll(async () => s?.stop());

  const ctx = () => s.server.ctx;
  const chain = () => s.server.chain!.client;
  const held = (amountMicros: number, key: string) => heldElsewhere(ctx(), s.projectId, recipient, amountMicros, key);
  /** The payments' legs asked of the server's relayer in one turn; each payment's row afterwards. */
  async function stepTogether(payments: Payment[]): Promise<Payment[]> {
    await relayLegs(ctx(), ctx().rails!.relayer, payments, recipient);
    return Promise.all(payments.map(async (p) => (await ctx().ledger.payments.getPayment(p.id))!));
  }
  const finish = (ids: string[]) => finishByWorker(ctx(), ids);

  test("behavior: the rail's own steps, taken at once, share relayer transactions and each completes", async () => {
    const payments = await Promise.all(Array.from({ length: 12 }, (_, i) => held(10_000 + i, `rail-${i}`)));
    const rail = ctx().rails!.byName.usdc_transfer!;
    await Promise.all(payments.map((p) => rail.advance(p)));
    const rows = await Promise.all(payments.map(async (p) => (await ctx().ledger.payments.getPayment(p.id))!));
    expect(new Set(rows.map((p) => p.txHash)).size).toBeLessThan(payments.length);
    const final = await finish(payments.map((p) => p.id));
    expect(final.every((p) => p.status === "completed")).toBe(true);
  });

  test("behavior: payments stepped in one turn go in one relayer transaction and each completes", async () => {
    const r0 = await chain().usdcBalance(recipient);
    const amounts = [100_001, 100_002, 100_003, 100_004, 100_005];
    const payments = await Promise.all(amounts.map((a, i) => held(a, `batch-${i}`)));
    const stepped = await stepTogether(payments);
    const hashes = new Set(stepped.map((p) => p.txHash));
    expect(hashes.size).toBe(1);
    const relayed = await relayerTxs(ctx().ledger, { txHash: stepped[0]!.txHash! });
    expect(relayed).toHaveLength(1);
    const final = await finish(payments.map((p) => p.id));
    expect(final.map((p) => p.status)).toEqual(amounts.map(() => "completed"));
    expect((await chain().usdcBalance(recipient)) - r0).toBe(BigInt(amounts.reduce((a, b) => a + b, 0)));
    // One transaction on-chain carried all five: five payments' worth of USDC transfers in one receipt.
    const receipt = await chain().receipt(stepped[0]!.txHash as `0x${string}`);
    expect(receipt?.status).toBe("success");
    expect(receipt!.logs.filter((l) => l.address.toLowerCase() === chain().usdcAddress.toLowerCase()).length).toBeGreaterThanOrEqual(2 * amounts.length * 2);
  });

  test("behavior: a payment whose transfers cannot move fails alone; the others in its transaction complete", async () => {
    // Move most of the wallet's USDC out behind the service's back: the ledger still shows it, the
    // chain no longer has it, so the second payment's transfer reverts on-chain.
    const project = (await ctx().ledger.projects.get(s.projectId))!;
    const wallet = ctx().custody.addressOf(project.wallet_index);
    const onChain = await chain().usdcBalance(wallet);
    const keep = 2_000_000n;
    const sink = devAccounts().other;
    const auth = await signAuthorization(ctx().custody, project.wallet_index, { chainId: chain().settings.chainId, usdc: chain().usdcAddress, to: sink.address, valueMicros: Number(onChain - keep), validAfter: 0, validBefore: Math.floor(Date.now() / 1000) + 600, nonce: randomNonce() });
    const sender = createWalletClient({ account: privateKeyToAccount(sink.privateKey), chain: chain().chain, transport: http(chain().settings.rpcUrl) });
    const drain = await sender.sendTransaction({ to: chain().usdcAddress, data: chain().encodeTransferWithAuthorization({ from: auth.from, to: auth.to, value: BigInt(auth.value), validAfter: 0n, validBefore: BigInt(auth.validBefore), nonce: auth.nonce, signature: auth.signature }) });
    expect((await chain().client.waitForTransactionReceipt({ hash: drain })).status).toBe("success");

    const before = (await ctx().ledger.balances.get(s.projectId))!;
    const r0 = await chain().usdcBalance(recipient);
    const ok = await held(1_000_000, "fits");
    const tooBig = await held(5_000_000, "does-not-fit-on-chain");
    const alsoOk = await held(500_000, "fits-too");
    const hashes = new Set((await stepTogether([ok, tooBig, alsoOk])).map((p) => p.txHash));
    expect(hashes.size).toBe(1);
    const [a, b, c] = await finish([ok.id, tooBig.id, alsoOk.id]);
    expect([a!.status, b!.status, c!.status]).toEqual(["completed", "failed", "completed"]);
    expect(b!.failureReason).toMatch(/reverted/);
    expect((await chain().usdcBalance(recipient)) - r0).toBe(1_500_000n);
    // The failed one was credited back in full (amount and fee); the others were spent.
    const after = (await ctx().ledger.balances.get(s.projectId))!;
    expect(before.available_micros - after.available_micros).toBe(ok.amountMicros + ok.feeMicros + alsoOk.amountMicros + alsoOk.feeMicros);
    expect(after.held_micros).toBe(0);
  });

  test("behavior: at most MAX_BATCH_PAYMENTS payments share a relayer transaction", async () => {
    const n = MAX_BATCH_PAYMENTS + 3;
    const payments = await Promise.all(Array.from({ length: n }, (_, i) => held(1_000 + i, `many-${i}`)));
    const rows = await stepTogether(payments);
    const sizes = [...rows.reduce((m, p) => m.set(p.txHash!, (m.get(p.txHash!) ?? 0) + 1), new Map<string, number>()).values()].sort((x, y) => y - x);
    expect(sizes).toEqual([MAX_BATCH_PAYMENTS, 3]);
    const final = await finish(payments.map((p) => p.id));
    expect(final.every((p) => p.status === "completed")).toBe(true);
  });

  test("behavior: a nonce another process took between our read and our store is never used; we sign again with the next", async () => {
    const relayer = ctx().rails!.relayer;
    const key = `relayer_nonce:${relayer.address.toLowerCase()}`;
    const ledger = ctx().ledger;
    const p = await held(7_001, "nonce-race");
    const before = Number(await ledger.kv.get(key));
    // Another process (simulated on the same database) allocates nonce `before` after we read the
    // counter and signed with it, just before our store.
    const store = ledger.relayerNonces.store.bind(ledger.relayerNonces);
    let raced = false;
    ledger.relayerNonces.store = (input) => {
      if (raced) return store(input);
      raced = true;
      return putKv(ledger, [{ key, value: String(before + 1) }]).then(() => store(input));
    };
    try {
      const [row] = await stepTogether([p]);
      const stored = (await relayerTxs(ledger, { txHash: row!.txHash! }))[0]!;
      expect(Number(stored.nonce)).toBe(before + 1);
      expect(Number(await ledger.kv.get(key))).toBe(before + 2);
    } finally {
      ledger.relayerNonces.store = store;
    }
    // The other "process" sends its own transaction with nonce `before`; then ours is mined after it.
    // The server's gap repair may fill that nonce first (nothing was stored for it, so it waits for no
    // broadcast): then the other process's send is refused as too low, and either way `before` is used once.
    const relayerAccount = privateKeyToAccount(ctx().rails!.chain.relayerKey);
    const wallet = createWalletClient({ account: relayerAccount, chain: chain().chain, transport: http(chain().settings.rpcUrl) });
    await wallet.sendTransaction({ to: relayerAccount.address, value: 0n, nonce: before }).catch(async (e: unknown) => {
      if (!/nonce too low/i.test(String(e))) throw e;
      const client = createPublicClient({ chain: chain().chain, transport: http(chain().settings.rpcUrl) });
      expect(await client.getTransactionCount({ address: relayerAccount.address, blockTag: "pending" })).toBeGreaterThan(before);
    });
    const [final] = await finish([p.id]);
    expect(final!.status).toBe("completed");
  });

  test("the ledger verifies afterwards", async () => {
    expect((await ctx().ledger.verify()).problems).toEqual([]);
  });
});
