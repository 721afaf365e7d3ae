// A relayer transaction the chain lost (a restart from an earlier state, a reorg, a drop from the pool)
// must not wedge the relayer: on the real chain, payments complete, the chain is rolled back so the
// last relayer transactions vanish, and then a payment of another project still completes, the lost
// transactions are sent again so the recipients really hold the money, and the ledger equals the chain.
import type { Permission } from "@agentwallet/api";
import { type Address, type Hex, createTestClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { LOST_TX_KEY_PREFIX, createRelayer } from "../../src/chain/relayer.ts";
import type { Payment } from "../../src/domain/payment.ts";
import { signAuthorization, randomNonce } from "../../src/rails/eip3009.ts";
import { findLostLegs } from "../../src/settlement/lostLegs.ts";
import { type LegDeps, encodeCalls, signTransfers } from "../../src/rails/onchainLeg.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { reconcile } from "../../src/services/reconcile.ts";
import { createToken } from "../../src/services/tokens.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { createPgSchema, dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";
import { finishByWorker, heldElsewhere, usdcLegPatch } from "../support/relay.ts";
import { depositRows, kvRows } from "../../src/ledger/testing.ts";

const recipientA: Address = "0x9965507D1a55bcC2695C58ba16FB37d819B0A4dc";
const recipientB: Address = "0x976EA74026E726554dB657fA54763abd0C3a0aa9";
const recipientC: Address = "0x14dC79964da2C08b23698B3D3cc7Ca32193d9955";
const recipientD: Address = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";
const recipientE: Address = "0xBcd4042DE499D14e55001CcbB24a551F3b954096";
const recipientF: Address = "0x71bE63f3384f5fb98995898A86B02Fb2426c5788";

describe.each(dialects)("relayer: a lost relayer transaction never wedges the rails (%s)", (dialect) => {
  let s: TestServer;
  let dropSchema: (() => Promise<void>) | undefined;
  let anvil: ReturnType<typeof createTestClient>;
  let other: { projectId: string; token: string };
  beforeAll(async () => {
    const pg = dialect === "postgres" ? await createPgSchema() : undefined;
    dropSchema = pg?.drop;
    s = await startTestServer({ database: dialect, databaseUrl: pg?.url, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
    anvil = createTestClient({ mode: "anvil", transport: http(s.server.chain!.client.settings.rpcUrl) });
    await s.fund(50_000_000n);
    other = await fundedProject(s, 10_000_000n);
  });
  afterAll(async () => {
    await s?.stop();
    await dropSchema?.();
  });

  const ctx = () => s.server.ctx;
  const chain = () => s.server.chain!.client;
  const pay = async (token: string, body: unknown) => {
    const res = await fetch(`${s.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(res.status).toBe(201);
    return (await res.json()) as { id: string };
  };
  /** The relayer's transaction at `nonce`, searched in the latest blocks. */
  async function transactionAt(from: Address, nonce: number) {
    const head = await chain().blockNumber();
    for (let n = head; n >= Math.max(0, head - 200); n--) {
      const block = await chain().client.getBlock({ blockNumber: BigInt(n), includeTransactions: true });
      const tx = block.transactions.find((t) => t.from.toLowerCase() === from.toLowerCase() && t.nonce === nonce);
      if (tx) return { hash: tx.hash, to: tx.to?.toLowerCase(), value: tx.value, input: tx.input };
    }
    throw new Error(`no transaction of ${from} with nonce ${nonce} in the last 200 blocks`);
  }
  /** The payment once it carries a transaction other than `lostHash`, mined and successful. */
  const sentAgain = (id: string, lostHash: Hex) =>
    poll("the completed payment to be sent again", async () => {
      const p = (await ctx().ledger.payments.getPayment(id))!;
      return p.txHash !== lostHash && p.txHash && (await chain().receipt(p.txHash as Hex))?.status === "success" ? p : undefined;
    }, 45_000);
  /**
   * Before it, a snapshot of the chain; then a payment of `micros` to `recipient`, relayed by a relayer of its own in a
   * transaction whose authorizations are valid for `validForS`, mined and completed: a transaction a revert can lose.
   */
  async function completedShortLived(recipient: Address, micros: number, key: string, validForS: number) {
    const runtime = s.server.chain!;
    const relayer = createRelayer(ctx().ledger, runtime, ctx().logger, ctx().custody);
    const d: LegDeps = { ctx: ctx(), chain: runtime, relayer };
    const snapshot = await anvil.snapshot();
    const p = await heldElsewhere(ctx(), s.projectId, recipient, micros, key);
    const validBefore = Math.floor(Date.now() / 1000) + validForS;
    const auths = await shortLivedLeg(d, p, validBefore, recipient);
    const lost = await relayer.prepare(p.id, encodeCalls(d, auths), (t) => usdcLegPatch({ ...t, auths }), { txHash: p.txHash, railState: p.railState });
    await relayer.broadcast(lost.raw);
    await poll("the transaction to be mined", async () => ((await chain().receipt(lost.hash)) ? true : undefined));
    expect((await finishByWorker(ctx(), [p.id]))[0]!.status).toBe("completed");
    return { runtime, p, lost, validBefore, snapshot };
  }
  const final = (id: string) =>
    poll(`payment ${id} to be final`, async () => {
      const p = (await ctx().ledger.payments.getPayment(id))!;
      return ["completed", "failed", "reversed"].includes(p.status) ? p : undefined;
    }, 45_000);

  test("behavior: after a rollback the lost transactions are sent again, and a payment of another project completes", async () => {
    const treasury = s.server.chain!.treasuryAddress;
    const [a0, b0, t0] = await Promise.all([chain().usdcBalance(recipientA), chain().usdcBalance(recipientB), chain().usdcBalance(treasury)]);
    const snapshot = await anvil.snapshot();
    const amounts = [1.1, 2.2, 3.3];
    const paid = [];
    for (const amount_usd of amounts) paid.push(await pay(s.token, { recipient: recipientA, amount_usd }));
    const done = await Promise.all(paid.map((p) => final(p.id)));
    expect(done.map((p) => p.status)).toEqual(["completed", "completed", "completed"]);
    const lost = [...new Set(done.map((p) => p.txHash as Hex))];
    expect((await chain().usdcBalance(recipientA)) - a0).toBe(6_600_000n);

    // The chain comes back from before those transactions: the ledger says completed, the chain has none of them.
    await anvil.revert({ id: snapshot });
    expect(await chain().usdcBalance(recipientA)).toBe(a0);
    for (const h of lost) expect(await chain().receipt(h)).toBeUndefined();

    // Another project's payment: its transaction has a nonce above the lost ones.
    const next = await pay(other.token, { recipient: recipientB, amount_usd: 0.5 });
    expect((await final(next.id)).status).toBe("completed");
    expect((await chain().usdcBalance(recipientB)) - b0).toBe(500_000n);

    // The lost transactions were sent again, as stored: the recipient holds the money the ledger says it paid.
    await poll("the lost transactions to be mined again", async () => ((await Promise.all(lost.map((h) => chain().receipt(h)))).every((r) => r?.status === "success") ? true : undefined), 45_000);
    expect((await chain().usdcBalance(recipientA)) - a0).toBe(6_600_000n);
    const fees = done.reduce((f, p) => f + p.feeMicros, 0) + (await ctx().ledger.payments.getPayment(next.id))!.feeMicros;
    expect((await chain().usdcBalance(treasury)) - t0).toBe(BigInt(fees));
    // Each was checked once its nonce was taken again: its transfer moved, so nothing is signed again.
    await poll("the lost transactions' payments to be checked", async () => {
      const left = await kvRows(ctx().ledger, LOST_TX_KEY_PREFIX);
      return left.length === 0 ? true : undefined;
    }, 45_000);
    for (const p of done) expect((await ctx().ledger.payments.getPayment(p.id))!.txHash).toBe(p.txHash);
  });

  test("behavior: a lost transaction whose authorizations can no longer succeed is replaced by a no-op at its nonce; its open payment fails and is credited back, its completed one is sent again", async () => {
    const runtime = s.server.chain!;
    const relayer = createRelayer(ctx().ledger, runtime, ctx().logger, ctx().custody);
    const d: LegDeps = { ctx: ctx(), chain: runtime, relayer };
    const c0 = await chain().usdcBalance(recipientC);
    const available0 = (await ctx().ledger.balances.get(s.projectId))!.available_micros;
    const snapshot = await anvil.snapshot();
    // Two payments in one relayer transaction, signed with authorizations that expire in seconds.
    const done = await heldElsewhere(ctx(), s.projectId, recipientC, 1_000_000, "short-lived-done");
    const open = await heldElsewhere(ctx(), s.projectId, recipientC, 2_000_000, "short-lived-open");
    const validBefore = Math.floor(Date.now() / 1000) + 8;
    const auths = await Promise.all([done, open].map((p) => shortLivedLeg(d, p, validBefore)));
    const txs = await Promise.all([done, open].map((p, i) => relayer.prepare(p.id, encodeCalls(d, auths[i]!), (t) => usdcLegPatch({ ...t, auths: auths[i]! }), { txHash: p.txHash, railState: p.railState })));
    expect(txs[1]!.hash).toBe(txs[0]!.hash);
    const lost = txs[0]!;
    await relayer.broadcast(lost.raw);
    await poll("the short-lived transaction to be mined", async () => ((await chain().receipt(lost.hash)) ? true : undefined));
    expect((await finishByWorker(ctx(), [done.id]))[0]!.status).toBe("completed");
    expect((await chain().usdcBalance(recipientC)) - c0).toBe(3_000_000n);

    await anvil.revert({ id: snapshot });
    expect(await chain().receipt(lost.hash)).toBeUndefined();
    // Its authorizations would expire before it could be mined: the nonce is taken by a no-op instead.
    await poll("the lost nonce to be taken", async () => ((await chain().nonceOf(runtime.relayerAddress, "latest")) > lost.nonce ? true : undefined), 45_000);
    const filler = await transactionAt(runtime.relayerAddress, lost.nonce);
    expect(filler).toMatchObject({ to: runtime.relayerAddress.toLowerCase(), value: 0n, input: "0x" });
    expect(filler.hash).not.toBe(lost.hash);

    // The open payment: its authorizations expired unused, so it fails and is credited back.
    while (Math.floor(Date.now() / 1000) <= validBefore) await new Promise((r) => setTimeout(r, 250));
    const [failed] = await finishByWorker(ctx(), [open.id]);
    expect(failed!.status).toBe("failed");
    expect(failed!.failureReason).toMatch(/expired/);
    // The completed one: signed again and sent, so the recipient holds what the ledger says was paid.
    const resent = await sentAgain(done.id, lost.hash);
    expect(resent.status).toBe("completed");
    expect((await chain().usdcBalance(recipientC)) - c0).toBe(1_000_000n);
    expect((await ctx().ledger.balances.get(s.projectId))!.available_micros).toBe(available0 - done.amountMicros - done.feeMicros);
    expect(await ctx().ledger.kv.get(`${LOST_TX_KEY_PREFIX}${lost.hash}`)).toBeUndefined();
  });

  test("behavior: a lost transaction whose signed bytes were forgotten is replaced by a no-op at its nonce, never sent empty; its completed payment is sent again", async () => {
    const d0 = await chain().usdcBalance(recipientD);
    // Housekeeping forgets a transaction's bytes a day after it was stored, long after its authorizations expired:
    // here they expire in seconds, and the bytes are forgotten at once, with a cut-off past them.
    const { runtime, p, lost, snapshot } = await completedShortLived(recipientD, 1_500_000, "forgotten-bytes", 8);
    expect(await ctx().ledger.relayerNonces.forgetSignedBytes(new Date(Date.now() + 60_000).toISOString(), 1_000)).toBeGreaterThan(0);
    expect(await ctx().ledger.relayerNonces.transactionByHash(lost.hash)).toEqual({ raw_tx: null, nonce: lost.nonce });

    await anvil.revert({ id: snapshot });
    expect(await chain().receipt(lost.hash)).toBeUndefined();
    await poll("the lost nonce to be taken", async () => ((await chain().nonceOf(runtime.relayerAddress, "latest")) > lost.nonce ? true : undefined), 45_000);
    const filler = await transactionAt(runtime.relayerAddress, lost.nonce);
    expect(filler).toMatchObject({ to: runtime.relayerAddress.toLowerCase(), value: 0n, input: "0x" });
    // Once its old authorizations expired unused, the completed payment is signed again and sent.
    const resent = await sentAgain(p.id, lost.hash);
    expect(resent.status).toBe("completed");
    expect((await chain().usdcBalance(recipientD)) - d0).toBe(1_500_000n);
    expect(await ctx().ledger.kv.get(`${LOST_TX_KEY_PREFIX}${lost.hash}`)).toBeUndefined();
  });

  test("behavior: a lost transaction the node refuses to take again (its fee under the chain's base fee) is replaced by a no-op after a few passes, not at its authorizations' expiry; its completed payment is sent again", async () => {
    const f0 = await chain().usdcBalance(recipientF);
    // Authorizations valid for a minute: sending the stored bytes again could still move the money for the first half
    // of it (the relayer's RESEND_MIN_VALIDITY_S is 30 s), and after that a no-op would take the nonce in any case.
    const { runtime, p, lost, validBefore, snapshot } = await completedShortLived(recipientF, 1_250_000, "refused-resend", 60);

    // The chain comes back from before it with a base fee far above the fee the stored bytes offer: the node
    // refuses them however often they are sent, as it did after a chain's restart in the fault suite.
    await anvil.revert({ id: snapshot });
    await anvil.setNextBlockBaseFeePerGas({ baseFeePerGas: 1_000_000_000_000n });
    await anvil.mine({ blocks: 1 });
    await expect(chain().sendRaw(lost.raw)).rejects.toThrow(/fee/i);
    // Taken after a few refused passes (one a second), while the bytes could still have moved money: not at their expiry.
    await poll("the lost nonce to be taken", async () => ((await chain().nonceOf(runtime.relayerAddress, "latest")) > lost.nonce ? true : undefined), 15_000);
    expect(Math.floor(Date.now() / 1000)).toBeLessThan(validBefore - 30);
    const filler = await transactionAt(runtime.relayerAddress, lost.nonce);
    expect(filler).toMatchObject({ to: runtime.relayerAddress.toLowerCase(), value: 0n, input: "0x" });
    // Once its old authorizations expired unused, the completed payment is signed again and sent, at the chain's fee.
    while (Math.floor(Date.now() / 1000) <= validBefore) await new Promise((r) => setTimeout(r, 250));
    const resent = await sentAgain(p.id, lost.hash);
    expect(resent.status).toBe("completed");
    expect((await chain().usdcBalance(recipientF)) - f0).toBe(1_250_000n);
    expect(await ctx().ledger.kv.get(`${LOST_TX_KEY_PREFIX}${lost.hash}`)).toBeUndefined();
  }, 180_000);

  test("behavior: a transaction the chain never saw, whose bytes are gone while its authorizations are valid, is sent again as a new transaction; the payment completes once", async () => {
    const runtime = s.server.chain!;
    const relayer = createRelayer(ctx().ledger, runtime, ctx().logger, ctx().custody);
    const d: LegDeps = { ctx: ctx(), chain: runtime, relayer };
    const e0 = await chain().usdcBalance(recipientE);
    const p = await heldElsewhere(ctx(), s.projectId, recipientE, 700_000, "forgotten-while-valid");
    const auths = await signTransfers(d, p, [{ to: recipientE, micros: p.amountMicros }, { to: runtime.treasuryAddress, micros: p.feeMicros }]);
    // Stored, never broadcast, its bytes then gone: the node does not know it and nothing can send it again as it was.
    const lost = await relayer.prepare(p.id, encodeCalls(d, auths), (t) => usdcLegPatch({ ...t, auths }), { txHash: p.txHash, railState: p.railState });
    expect(await ctx().ledger.relayerNonces.forgetSignedBytes(new Date(Date.now() + 60_000).toISOString(), 1_000)).toBeGreaterThan(0);
    const [done] = await finishByWorker(ctx(), [p.id]);
    expect(done!.status).toBe("completed");
    expect(done!.txHash).not.toBe(lost.hash);
    // Sent again at once, not after failed steps waiting for gap repair to take the old nonce.
    expect(done!.stepErrors).toBe(0);
    expect((await chain().receipt(done!.txHash as Hex))?.status).toBe("success");
    // The same authorizations, moved once; the nonce the lost one held was filled with a no-op.
    expect((await chain().usdcBalance(recipientE)) - e0).toBe(700_000n);
    expect(await transactionAt(runtime.relayerAddress, lost.nonce)).toMatchObject({ to: runtime.relayerAddress.toLowerCase(), value: 0n, input: "0x" });
  });

  test("the ledger equals the chain for every project, and verifies", async () => {
    const r = await reconcile(ctx().ledger, (a) => chain().usdcBalance(a));
    expect(r.rows.map((row) => [row.project_id, row.drift_micros])).toEqual(r.rows.map((row) => [row.project_id, 0]));
    expect(r.ok).toBe(true);
    expect(await findLostLegs(ctx().ledger.payments, chain(), 1)).toEqual([]);
    expect((await ctx().ledger.verify()).problems).toEqual([]);
  });
});

/** A second project with its own token and a real on-chain deposit, credited by the server's watcher. */
async function fundedProject(s: TestServer, micros: bigint): Promise<{ projectId: string; token: string }> {
  const ctx = s.server.ctx;
  const project = await ctx.ledger.projects.create({ name: "other", plan: "free" });
  const perms: Permission[] = ["read", "pay"];
  const { token } = await createToken(ctx, { projectId: project.id, permissions: perms, mode: "test" });
  const { address } = await getDepositAddress(ctx, project.id);
  const hash = await s.server.chain!.sandbox!.mint(address as Address, micros);
  await poll(`deposit ${hash} credited`, async () => {
    await ctx.hooks.depositHint?.(hash);
    const [row] = await depositRows(ctx.ledger, { txHash: hash });
    return row?.status === "credited" ? true : undefined;
  }, 20_000);
  return { projectId: project.id, token };
}

/** The usdc rail's leg (amount to `recipient`, fee to the treasury), with authorizations valid only until `validBefore`. */
async function shortLivedLeg(d: LegDeps, p: Payment, validBefore: number, recipient: Address = recipientC) {
  const project = (await d.ctx.ledger.projects.get(p.projectId))!;
  const sign = (to: Address, micros: number) => signAuthorization(d.ctx.custody, project.wallet_index, { chainId: d.chain.client.settings.chainId, usdc: d.chain.client.usdcAddress, to, valueMicros: micros, validAfter: 0, validBefore, nonce: randomNonce() });
  return [await sign(recipient, p.amountMicros), await sign(d.chain.treasuryAddress, p.feeMicros)];
}
