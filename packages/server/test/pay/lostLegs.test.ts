// reconcile's loud check: a payment the ledger counts completed whose relayed transfer the chain no
// longer has (rolled back) is named, and one not yet as deep as a payment needs is named as shallow.
// Real chain, real databases, no server: nothing sends the lost transaction again behind the test's back.
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Relayer, createRelayer } from "../../src/chain/relayer.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";
import { findLostLegs } from "../../src/settlement/lostLegs.ts";
import { getDepositAddress } from "../../src/services/getDepositAddress.ts";
import { reconcile } from "../../src/services/reconcile.ts";
import { startTestChain, type TestChain } from "../support/chain.ts";
import { createTestContext, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";
import { heldElsewhere, relayLegs } from "../support/relay.ts";
import { relayerTxs, setAvailable } from "../../src/ledger/testing.ts";

const recipient: Address = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";

describe.each(dialects)("reconcile: completed payments whose transfer is not on the chain (%s)", (dialect) => {
  let t: TestContext;
  let chain: TestChain;
  let relayer: Relayer;
  let projectId: string;
  beforeAll(async () => {
    [t, chain] = await Promise.all([createTestContext(dialect), startTestChain()]);
    const accounts = chain.dev.accounts;
    const runtime: ChainRuntime = { client: chain.client, relayerKey: accounts.relayer.privateKey, relayerAddress: accounts.relayer.address, treasuryAddress: accounts.treasury.address };
    relayer = createRelayer(t.ctx.ledger, runtime, t.ctx.logger, t.ctx.custody);
    await relayer.syncNonce();
    t.ctx.rails = { chain: runtime, relayer, byName: {} };
    projectId = (await t.ctx.ledger.projects.create({ name: "p", plan: "free" })).id;
    const { address } = await getDepositAddress(t.ctx, projectId);
    await chain.dev.mint(address as Address, 10_000_000n);
    await setAvailable(t.ctx.ledger, projectId, 10_000_000);
  });
  afterAll(async () => {
    await t?.close();
    await chain?.stop();
  });

  const lostLegs = (confirmations = 1) => findLostLegs(t.ctx.ledger.payments, chain.client, confirmations);
  const report = () => reconcile(t.ctx.ledger, (a) => chain.client.usdcBalance(a), () => lostLegs());

  test("behavior: a completed payment whose transaction was rolled back is flagged, and reconcile fails", async () => {
    const p = await heldElsewhere(t.ctx, projectId, recipient, 1_000_000, "rolled-back");
    const snapshot = await chain.snapshot();
    const [hash] = await relayLegs(t.ctx, relayer, [p], recipient);
    await poll("the transfer to be mined", async () => ((await chain.client.receipt(hash!)) ? true : undefined));
    await t.ctx.ledger.payments.resolve(p.id, "completed");
    expect(await lostLegs()).toEqual([]);
    const before = await report();
    expect(before.lost_legs).toEqual([]);
    expect(before.ok).toBe(true);

    await chain.revert(snapshot);
    expect(await lostLegs()).toEqual([{ payment_id: p.id, project_id: projectId, rail: "usdc_transfer", leg: "transfer", tx_hash: hash, state: "missing" }]);
    const after = await report();
    expect(after.lost_legs.map((l) => l.payment_id)).toEqual([p.id]);
    expect(after.ok).toBe(false);

    // Sent again (as the relayer's gap repair does): on the chain, but judged by the confirmation depth.
    const raw = (await relayerTxs(t.ctx.ledger, { txHash: hash! }))[0]!.raw_tx as Hex;
    await relayer.broadcast(raw);
    await poll("the transfer to be mined again", async () => ((await chain.client.receipt(hash!)) ? true : undefined));
    expect(await lostLegs(1)).toEqual([]);
    expect((await lostLegs(3)).map((l) => [l.payment_id, l.state])).toEqual([[p.id, "shallow"]]);
    await chain.mine(2);
    expect(await lostLegs(3)).toEqual([]);
    expect((await report()).ok).toBe(true);
  });
});
