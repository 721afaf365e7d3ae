import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type Principal } from "../../src/domain/principal.ts";
import { usdcIntent } from "../../src/services/payments/parsePay.ts";
import { relayTransfers } from "../../src/rails/onchainLeg.ts";
import { relayedState } from "../../src/rails/usdc/usdcRail.ts";
import { usdcStates } from "../../src/rails/usdc/usdcState.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { payingPrincipal, untilFinal } from "../support/holds.ts";
import { relayerTxs } from "../../src/ledger/testing.ts";

const recipient: Address = "0x976EA74026E726554dB657fA54763abd0C3a0aa9";

describe("recovery: a payment interrupted at each step is finished by a worker, exactly once", () => {
  let s: TestServer;
  let principal: Principal;
  beforeAll(async () => {
    s = await startTestServer();
    await s.fund(50_000_000n);
    principal = payingPrincipal(s.projectId);
  });
  afterAll(async () => s?.stop());

  const ctx = () => s.server.ctx;
  const past = () => new Date(Date.now() - 1_000).toISOString();
  const final = (id: string) => untilFinal(ctx(), id);

  test("crash right after the hold (nothing signed): the worker signs, sends and completes it", async () => {
    const r0 = await s.server.chain!.client.usdcBalance(recipient);
    const held = await ctx().ledger.payments.hold({ ...usdcIntent({ address: recipient, amountMicros: 1_111_111, principal, description: null, idempotencyKey: "after-hold" }), projectId: s.projectId, railState: null, inFlightUntil: past(), leaseOwner: "a-dead-process" });
    expect(held.kind).toBe("held");
    const p = await final((held as { payment: { id: string } }).payment.id);
    expect(p.status).toBe("completed");
    expect((await s.server.chain!.client.usdcBalance(recipient)) - r0).toBe(1_111_111n);
  });

  test("crash after the signed transaction was stored but before it was broadcast: the worker re-sends the same one", async () => {
    const r0 = await s.server.chain!.client.usdcBalance(recipient);
    const held = await ctx().ledger.payments.hold({ ...usdcIntent({ address: recipient, amountMicros: 2_222_222, principal, description: null, idempotencyKey: "after-sign" }), projectId: s.projectId, railState: null, inFlightUntil: new Date(Date.now() + 60_000).toISOString(), leaseOwner: "a-dead-process" });
    if (held.kind !== "held") throw new Error("hold failed");
    const rails = ctx().rails!;
    // Store the leg exactly as the rail does, but "die" before broadcasting.
    const relayer = { ...rails.relayer, broadcast: async () => {} };
    const hash = await relayTransfers({ ctx: ctx(), chain: rails.chain, relayer }, held.payment, [{ to: recipient, micros: 2_222_222 }, { to: rails.chain.treasuryAddress, micros: held.payment.feeMicros }], (t) => ({ status: "processing", txHash: t.hash, railState: relayedState("held", t) }));
    expect(await s.server.chain!.client.transactionKnown(hash)).toBe(false);
    await ctx().ledger.payments.updatePayment(held.payment.id, { leaseOwner: null, leaseUntil: past(), inFlightUntil: null, nextAttemptAt: past() });
    const p = await final(held.payment.id);
    expect(p.status).toBe("completed");
    expect(p.txHash).toBe(hash); // the stored transaction, not a new one
    expect(usdcStates.read(p)).toMatchObject({ stage: "relayed", transfers: [{}, {}] });
    expect((await s.server.chain!.client.usdcBalance(recipient)) - r0).toBe(2_222_222n);
    const relayed = await relayerTxs(ctx().ledger, { paymentId: p.id });
    expect(relayed.map((r) => r.tx_hash)).toEqual([hash]);
  });

  test("two processes advancing the same payment at once: one leg is stored and sent, the other is refused", async () => {
    const r0 = await s.server.chain!.client.usdcBalance(recipient);
    const held = await ctx().ledger.payments.hold({ ...usdcIntent({ address: recipient, amountMicros: 3_333_333, principal, description: null, idempotencyKey: "race" }), projectId: s.projectId, railState: null, inFlightUntil: past(), leaseOwner: "someone", leaseUntil: new Date(Date.now() + 60_000).toISOString() });
    if (held.kind !== "held") throw new Error("hold failed");
    const rail = ctx().rails!.byName.usdc_transfer!;
    // Both read the same pending row, as a dispatcher and a worker would after a lease expired.
    const outcomes = await Promise.allSettled([rail.advance(held.payment), rail.advance(held.payment), rail.advance(held.payment)]);
    expect(outcomes.filter((o) => o.status === "fulfilled")).toHaveLength(1);
    for (const o of outcomes.filter((o) => o.status === "rejected")) expect(String((o as PromiseRejectedResult).reason)).toMatch(/advanced by another process/);
    await ctx().ledger.payments.updatePayment(held.payment.id, { leaseOwner: null, leaseUntil: null, nextAttemptAt: past() });
    const p = await final(held.payment.id);
    expect(p.status).toBe("completed");
    const relayed = await relayerTxs(ctx().ledger, { paymentId: p.id });
    expect(relayed).toHaveLength(1);
    expect((await s.server.chain!.client.usdcBalance(recipient)) - r0).toBe(3_333_333n);
  });

  test("the ledger verifies afterwards", async () => {
    expect((await ctx().ledger.verify()).problems).toEqual([]);
  });
});
