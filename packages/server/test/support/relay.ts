// Relayer tests on the real chain: payments held under a lease nobody runs (so only the test steps
// them), their legs signed as the usdc rail signs them and handed to a relayer in one turn, and the
// server's own worker finishing them afterwards.
import type { Address, Hex } from "viem";
import type { Relayer } from "../../src/chain/relayer.ts";
import type { AppContext } from "../../src/context.ts";
import type { Payment } from "../../src/domain/payment.ts";
import { type LegDeps, type RelayedLeg, encodeCalls, signTransfers } from "../../src/rails/onchainLeg.ts";
import { relayedState } from "../../src/rails/usdc/usdcRail.ts";
import { usdcIntent } from "../../src/services/payments/parsePay.ts";
import { payingPrincipal, untilFinal } from "./holds.ts";

/** The payment row once its usdc_transfer leg is relayed, as the rail stores it (usdcRail.ts, `startLeg`). */
export const usdcLegPatch = (t: RelayedLeg) => ({ status: "processing" as const, txHash: t.hash, railState: relayedState("held", t) });

const past = () => new Date(Date.now() - 1_000).toISOString();

/** A held payment to `recipient` whose lease belongs to a process that is not running. */
export async function heldElsewhere(ctx: AppContext, projectId: string, recipient: Address, amountMicros: number, key: string): Promise<Payment> {
  const h = await ctx.ledger.payments.hold({ ...usdcIntent({ address: recipient, amountMicros, principal: payingPrincipal(projectId), description: null, idempotencyKey: key }), projectId, railState: null, inFlightUntil: past(), leaseOwner: "elsewhere", leaseUntil: new Date(Date.now() + 60_000).toISOString() });
  if (h.kind !== "held") throw new Error(`hold ${key} failed: ${h.kind}`);
  return h.payment;
}

/**
 * Signs each payment's leg as the usdc rail does (amount to `recipient`, fee to the treasury), asks
 * `relayer` for all of them in one turn (so they may share a transaction), and broadcasts. Resolves
 * with each payment's relayer transaction hash once stored and sent.
 */
export async function relayLegs(ctx: AppContext, relayer: Relayer, payments: Payment[], recipient: Address): Promise<Hex[]> {
  const d: LegDeps = { ctx, chain: ctx.rails!.chain, relayer };
  const auths = await Promise.all(payments.map((p) => signTransfers(d, p, [{ to: recipient, micros: p.amountMicros }, { to: d.chain.treasuryAddress, micros: p.feeMicros }])));
  const txs = await Promise.all(payments.map((p, i) => relayer.prepare(p.id, encodeCalls(d, auths[i]!), (t) => usdcLegPatch({ ...t, auths: auths[i]! }), { txHash: p.txHash, railState: p.railState })));
  await Promise.all(txs.map((t) => relayer.broadcast(t.raw)));
  return txs.map((t) => t.hash);
}

/** Hands the payments to the server's worker and waits until each is final. */
export async function finishByWorker(ctx: AppContext, ids: string[]): Promise<Payment[]> {
  for (const id of ids) await ctx.ledger.payments.updatePayment(id, { leaseOwner: null, leaseUntil: null, nextAttemptAt: past() });
  return Promise.all(ids.map((id) => untilFinal(ctx, id)));
}
