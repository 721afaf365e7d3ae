// The one rule for settlement steps that throw (settlement/settlementRetry.ts), driven through the payment
// worker on both ledgers with a clock the test moves: an error no retry can cure fails the payment at
// once and credits it back with its code; an error a retry may cure (here a chain RPC that refuses
// connections: a real closed port) is retried after delays that double, and the payment fails with
// `retries_exhausted` at the bound. No sleeps: each pass runs when the test moves the clock past the
// payment's next attempt.
import { createServer } from "node:net";
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test, vi } from "vitest";
import { createChainClient } from "../../src/chain/chainClient.ts";
import { createRelayer } from "../../src/chain/relayer.ts";
import type { ChainRuntime } from "../../src/chain/runtime.ts";
import type { Payment } from "../../src/domain/payment.ts";
import type { Rails } from "../../src/rails/rails.ts";
import { backoffMs, classifyStepError } from "../../src/settlement/settlementRetry.ts";
import { createUsdcRail } from "../../src/rails/usdc/usdcRail.ts";
import { createPaymentWorker } from "../../src/settlement/paymentWorker.ts";
import { resolveByHand } from "../../src/services/resolveByHand.ts";
import { createTestContext, type TestContext } from "../support/context.ts";
import { dialects, ledgerOn } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { relayerTxs } from "../../src/ledger/testing.ts";

// anvil's first two well-known accounts: a relayer key and a treasury (no chain answers here anyway).
const RELAYER_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
const TREASURY: Address = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const POLICY = { SETTLEMENT_STEP_ERRORS_MAX: "4", SETTLEMENT_BACKOFF_MIN_MS: "1000", SETTLEMENT_BACKOFF_MAX_MS: "3000" };

/** A loopback port nothing listens on: connections to it are refused at once. */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, "127.0.0.1", r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

test("backoff doubles from the minimum and stops at the maximum", () => {
  const policy = { stepErrorsMax: 10, backoffMinMs: 500, backoffMaxMs: 60_000 };
  expect([1, 2, 3, 4, 5, 6, 7, 8, 20].map((n) => backoffMs(policy, n))).toEqual([500, 1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000]);
});

test("error: a rail state that does not parse names its payment, whatever the rail; a stage change the rail's table does not list is refused", async () => {
  const { CorruptRailState } = await import("../../src/rails/railState.ts");
  const { usdcStates } = await import("../../src/rails/usdc/usdcState.ts");
  const { fiatStates } = await import("../../src/rails/fiat/fiatState.ts");
  const { x402States } = await import("../../src/rails/x402/x402State.ts");
  for (const [codec, rail] of [[usdcStates, "usdc_transfer"], [fiatStates, "fiat"], [x402States, "x402"]] as const) {
    for (const railState of ["{", '{"stage":"no_such_stage"}', "[]"]) {
      const read = () => codec.read({ id: "pay_corrupt", railState });
      expect(read).toThrow(CorruptRailState);
      expect(read).toThrow(`payment pay_corrupt: its ${rail} rail_state does not parse`);
    }
  }
  // x402 is always held with its quote: no state at all is corrupt too, never a default.
  expect(() => x402States.read({ id: "pay_none", railState: null })).toThrow("payment pay_none: its x402 rail_state does not parse");
  expect(classifyStepError(new CorruptRailState("pay_corrupt", "fiat", "not JSON"))).toMatchObject({ kind: "corrupt" });
  expect(() => fiatStates.write("fee_sweep", { stage: "held" })).toThrow("fiat rail state may not go from fee_sweep to held");
});

test("classification: refused connections are transient, a signer's refusal and a rail's PermanentFailure are permanent", async () => {
  const { SigningRefusedError } = await import("../../src/chain/signingPool.ts");
  const { PermanentFailure } = await import("../../src/rails/permanentFailure.ts");
  expect(classifyStepError(new Error("fetch failed: ECONNREFUSED")).kind).toBe("transient");
  expect(classifyStepError(new SigningRefusedError("signing failed: Address must match its checksum counterpart"))).toMatchObject({ kind: "permanent", code: "signing_refused" });
  expect(classifyStepError(new PermanentFailure("payout_refused", "The bank refused the account."))).toEqual({ kind: "permanent", code: "payout_refused", message: "The bank refused the account." });
});

describe.each(dialects)("failed settlement steps, through the payment worker (%s)", (dialect) => {
  let t: TestContext;
  let now = Date.parse("2030-01-01T00:00:00.000Z");
  let worker: ReturnType<typeof createPaymentWorker>;
  let projectId: string;
  beforeAll(async () => {
    t = await createTestContext(dialect, { env: POLICY });
    const clock = () => new Date(now);
    t.ctx.clock = clock;
    t.ctx.ledger = ledgerOn(t.db, clock);
    const client = createChainClient({ rpcUrl: `http://127.0.0.1:${await closedPort()}`, chainId: 8453, usdcAddress: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", timeoutMs: 2_000, retries: 0 });
    const chain: ChainRuntime = { client, relayerKey: RELAYER_KEY, relayerAddress: "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266", treasuryAddress: TREASURY };
    const relayer = createRelayer(t.ctx.ledger, chain, t.ctx.logger, t.ctx.custody);
    const rails: Rails = { chain, relayer, byName: { usdc_transfer: createUsdcRail({ ctx: t.ctx, chain, relayer }) } };
    t.ctx.rails = rails;
    worker = createPaymentWorker(t.ctx, rails);
    const project = await t.ctx.ledger.projects.create({ name: "p", plan: "free" });
    projectId = project.id;
    // The wallet exists (signing needs its index) and holds a real credit, so the ledger verifies.
    await t.ctx.ledger.projects.setWalletAddress(projectId, t.ctx.custody.addressOf(project.wallet_index));
    const deposit = { chain: "base", txHash: `0x${"33".repeat(32)}`, logIndex: 0 };
    await t.ctx.ledger.deposits.recordSeen({ ...deposit, projectId, toAddress: TREASURY, fromAddress: TREASURY, amountMicros: 10_000_000, blockNumber: 1, blockHash: `0x${"44".repeat(32)}` });
    await t.ctx.ledger.deposits.credit(deposit);
  });
  afterAll(async () => t?.close());
  /** The payments the corrupt-state test leaves for an operator. */
  const leftForOperator: { notJson?: string; wrongShape?: string; healthy?: string } = {};

  /** A held payment whose creating process is gone (its lease over): the worker's to take. */
  async function abandoned(recipient: string, key: string): Promise<Payment> {
    const at = new Date(now - 1_000).toISOString();
    const h = await t.ctx.ledger.payments.hold(usdcPayment(projectId, 1_000_000, 20_000, { recipient, idempotencyKey: key, inFlightUntil: at, leaseOwner: "gone", leaseUntil: at }));
    if (h.kind !== "held") throw new Error(h.kind);
    return h.payment;
  }
  const available = async () => (await t.ctx.ledger.balances.get(projectId))!.available_micros;

  test("a recipient the wallet cannot sign for (an all-uppercase address stored before it was normalised) fails at once, credited back: signing_refused", async () => {
    const before = await available();
    const p = await abandoned("0x90F79BF6EB2C4F870365E785982E1F101E93B906", "uppercase-before-the-fix");
    expect(await available()).toBe(before - 1_020_000);
    await worker.runOnce();
    const after = (await t.ctx.ledger.payments.getPayment(p.id))!;
    expect(after).toMatchObject({ status: "failed", failureCode: "signing_refused", stepErrors: 0, txHash: null });
    expect(after.failureReason).toMatch(/refused to sign/);
    expect(await available()).toBe(before);
    const relayed = await relayerTxs(t.ctx.ledger, { paymentId: p.id });
    expect(relayed).toEqual([]);
  });

  test("an unreachable chain: retried after 1 s, 2 s, 3 s (doubling, capped), then failed at the bound and credited back: retries_exhausted", async () => {
    const before = await available();
    const p = await abandoned("0x90F79bf6EB2c4f870365E785982E1f101E93b906", "chain-down");
    const delays: number[] = [];
    for (let pass = 1; pass <= 3; pass++) {
      expect(await worker.runOnce()).toBe(1);
      const row = (await t.ctx.ledger.payments.getPayment(p.id))!;
      expect(row).toMatchObject({ status: "pending", stepErrors: pass, txHash: null, leaseOwner: null });
      delays.push(Date.parse(row.nextAttemptAt) - now);
      // Not due before its time: a pass now takes nothing.
      expect(await worker.runOnce()).toBe(0);
      now = Date.parse(row.nextAttemptAt);
    }
    expect(delays).toEqual([1_000, 2_000, 3_000]);
    expect(await worker.runOnce()).toBe(1);
    const failed = (await t.ctx.ledger.payments.getPayment(p.id))!;
    expect(failed).toMatchObject({ status: "failed", failureCode: "retries_exhausted", txHash: null });
    expect(failed.failureReason).toMatch(/after 4 attempts \(last error: .+\)/);
    expect(await available()).toBe(before);
    // Final: nothing left for the worker.
    now += 60_000;
    expect(await worker.runOnce()).toBe(0);
  });

  test("error: a payment whose rail state does not parse is logged as an error with its id and left untouched, while the worker settles the others", async () => {
    const before = await available();
    const notJson = await abandoned("0x90F79bf6EB2c4f870365E785982E1f101E93b906", "corrupt-not-json");
    const wrongShape = await abandoned("0x90F79bf6EB2c4f870365E785982E1f101E93b906", "corrupt-wrong-shape");
    const healthy = await abandoned("0x90F79bf6EB2c4f870365E785982E1f101E93b906", "healthy-beside-corrupt");
    Object.assign(leftForOperator, { notJson: notJson.id, wrongShape: wrongShape.id, healthy: healthy.id });
    const corrupt = { [notJson.id]: '{"stage":"relayed","transfers":[', [wrongShape.id]: '{"stage":"relayed","transfers":"0xdead","relayNonce":-1}' };
    for (const [id, railState] of Object.entries(corrupt)) await t.ctx.ledger.payments.updatePayment(id, { railState: railState });
    const errors = vi.spyOn(t.ctx.logger, "error");
    try {
      // One pass takes all three: the corrupt ones do not stop it, the healthy one takes its own (transient) step.
      expect(await worker.runOnce()).toBe(3);
      for (const [id, railState] of Object.entries(corrupt)) {
        const row = (await t.ctx.ledger.payments.getPayment(id))!;
        // Left as it was: not failed, not credited back, not counted towards the retry bound; looked at again after the longest delay.
        expect(row).toMatchObject({ status: "pending", railState: railState, txHash: null, stepErrors: 0, failureCode: null, leaseOwner: null });
        expect(Date.parse(row.nextAttemptAt) - now).toBe(3_000);
        const logged = errors.mock.calls.filter(([fields]) => (fields as { payment_id?: string }).payment_id === id);
        expect(logged).toHaveLength(1);
        expect(String((logged[0]![0] as { err: unknown }).err)).toContain(`payment ${id}: its usdc_transfer rail_state does not parse`);
      }
      expect(await t.ctx.ledger.payments.getPayment(healthy.id)).toMatchObject({ status: "pending", stepErrors: 1 });
      expect(await available()).toBe(before - 3 * 1_020_000);
    } finally {
      errors.mockRestore();
    }
  });

  test("an operator ends such a payment by hand: failed credits it back, completed spends it; one whose state parses, or a final one, is refused", async () => {
    const { notJson, wrongShape, healthy } = leftForOperator;
    if (!notJson || !wrongShape || !healthy) throw new Error("the corrupt-state test above did not run");
    const by = "cli:ops";
    const refused = (r: Promise<unknown>) => r.then(() => "resolved", (e: { code?: string }) => e.code);
    expect(await refused(resolveByHand(t.ctx, { paymentId: healthy, outcome: "failed", reason: "looked", by }))).toBe("rail_state_readable");
    expect(await refused(resolveByHand(t.ctx, { paymentId: "pay_nope", outcome: "failed", reason: "looked", by }))).toBe("payment_not_found");
    expect(await refused(resolveByHand(t.ctx, { paymentId: notJson, outcome: "failed", reason: "  ", by }))).toBe("invalid_request");
    expect(await refused(resolveByHand(t.ctx, { paymentId: notJson, outcome: "failed", reason: "looked", by, txHash: `0x${"ab".repeat(32)}` }))).toBe("invalid_request");
    const before = await available();
    const failed = await resolveByHand(t.ctx, { paymentId: notJson, outcome: "failed", reason: "relayer nonce never used; no Transfer log", by });
    expect(failed.problem).toContain(`payment ${notJson}: its usdc_transfer rail_state does not parse`);
    expect(failed.payment).toMatchObject({ status: "failed", failureCode: "operator_resolved", failureReason: `Resolved as failed by ${by}: relayer nonce never used; no Transfer log` });
    expect(await available()).toBe(before + 1_020_000);
    const hash = `0x${"cd".repeat(32)}`;
    const completed = await resolveByHand(t.ctx, { paymentId: wrongShape, outcome: "completed", reason: "Transfer log in the tx", by, txHash: hash.toUpperCase().replace("0X", "0x") });
    expect(completed.payment).toMatchObject({ status: "completed", failureCode: null, txHash: hash });
    expect(await available()).toBe(before + 1_020_000);
    expect(await refused(resolveByHand(t.ctx, { paymentId: notJson, outcome: "completed", reason: "again", by }))).toBe("payment_final");
    // Final now: the worker has nothing of theirs to take.
    now += 60_000;
    await worker.runOnce();
    expect(await t.ctx.ledger.payments.getPayment(notJson)).toMatchObject({ status: "failed" });
  });

  test("the ledger verifies", async () => {
    expect((await t.ctx.ledger.verify()).problems).toEqual([]);
  });
});
