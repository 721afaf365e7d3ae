/**
 * Relayed legs of completed payments that the chain no longer has. A payment is counted `completed`
 * once its relayer transaction is PAYMENT_CONFIRMATIONS deep; a rollback deeper than that (a chain
 * restarted from an earlier state, a deep reorg) can take the transaction away again. The relayer
 * sends the stored transaction again while its authorizations are valid (relayer.ts, "Gaps"); when
 * they expired unmined and the relayer filled the nonce with a no-op, `resendLostLegs` signs the same
 * transfers again, so the chain comes to hold what the ledger says was paid. `findLostLegs` is the
 * loud check behind `reconcile`: completed payments whose transfer is not on the chain at the
 * confirmation depth.
 *
 * An x402 payment's settlement is the merchant's facilitator's transaction, not the relayer's, so no
 * nonce gap shows its loss: `resendLostX402Settlements` looks at the x402 payments completed in the
 * last hour whose authorization the chain no longer shows used, and once that authorization has
 * expired unused (it can never move money then) signs the same transfer to the merchant again and
 * relays it. The merchant served the request on the strength of the settlement: it is owed the price.
 */
import type { Hex } from "viem";
import type { ChainClient } from "../chain/chainClient.ts";
import { LOST_TX_KEY_PREFIX } from "../chain/relayer.ts";
import type { PaymentStore } from "../ledger/ports.ts";
import type { Payment, PaymentPatch } from "../domain/payment.ts";
import type { LostLeg } from "../services/reconcile.ts";
import type { Authorization } from "../rails/eip3009.ts";
import { fiatStates } from "../rails/fiat/fiatState.ts";
import { type LegDeps, type RelayedLeg, relayTransfers } from "../rails/onchainLeg.ts";
import { CorruptRailState, type FeeSweep } from "../rails/railState.ts";
import { relayedState } from "../rails/usdc/usdcRail.ts";
import { usdcStates } from "../rails/usdc/usdcState.ts";
import { type X402State, x402States } from "../rails/x402/x402State.ts";

/** Completed payments one `findLostLegs` looks at, most recently completed first: a rollback only takes recent blocks. */
export const LOST_LEG_CHECK_MAX = 1_000;
/** Lost transactions whose payments one `resendLostLegs` pass looks at (the rest wait for the next pass). */
const LOST_TXS_PER_PASS = 16;

/** What a leg is judged by: whether its first authorization was used on-chain. */
type LegAuthorization = Pick<Authorization, "from" | "nonce">;
type PaymentLeg = { leg: LostLeg["leg"]; hash: string; transfers: LegAuthorization[] };

/**
 * The legs a payment records: its main transfer (relayed for usdc_transfer and fiat; for x402 the
 * merchant's settlement of our authorization, or our own transfer once it was sent again) and its fee
 * sweep (fiat, x402).
 */
function paymentLegs(p: Payment): PaymentLeg[] {
  const { main, feeSweep } = recordedLegs(p);
  const legs: PaymentLeg[] = [];
  if (p.txHash && main.length) legs.push({ leg: "transfer", hash: p.txHash, transfers: main });
  if (feeSweep?.transfers.length) legs.push({ leg: "fee_sweep", hash: feeSweep.hash, transfers: feeSweep.transfers });
  return legs;
}

/** A payment's main transfer's authorizations and its fee sweep, read by its rail's codec. */
function recordedLegs(p: Payment): { main: LegAuthorization[]; feeSweep: FeeSweep | undefined } {
  if (p.rail === "x402") {
    const s = x402States.read(p);
    if (s.stage !== "settled") return { main: s.stage === "signed" ? [s.authorization] : [], feeSweep: undefined };
    // The authorization that pays the merchant: ours once sent again, else the one the merchant settled.
    return { main: s.resent ? s.resent.transfers : [s.authorization], feeSweep: s.feeSweep };
  }
  if (p.rail === "fiat") {
    const s = fiatStates.read(p);
    if (s.stage === "held" || s.stage === "payout_created") return { main: [], feeSweep: undefined };
    return { main: s.transfers, feeSweep: s.stage === "fee_sweep" ? s.feeSweep : undefined };
  }
  const s = usdcStates.read(p);
  return { main: s.stage === "relayed" ? s.transfers : [], feeSweep: undefined };
}

/**
 * Completed payments (the `limit` most recently completed) whose relayed transfer is not on the chain
 * at the confirmation depth. A leg is judged by its first authorization (a leg's transfers move
 * together or not at all), so a transfer moved by a resubmission under another hash counts as moved.
 */
export async function findLostLegs(payments: PaymentStore, client: ChainClient, confirmations: number, limit = LOST_LEG_CHECK_MAX): Promise<LostLeg[]> {
  const head = await client.blockNumber();
  const deep = Math.max(0, head - Math.max(1, confirmations) + 1);
  const completed = await payments.recentCompletedWithRailState(limit);
  const lost: LostLeg[] = [];
  for (const p of completed) {
    for (const leg of paymentLegs(p)) {
      const a = leg.transfers[0]!;
      if (await client.authorizationUsed(a.from, a.nonce, deep)) continue;
      const used = deep < head && (await client.authorizationUsed(a.from, a.nonce));
      lost.push({ payment_id: p.id, project_id: p.projectId, rail: p.rail, leg: leg.leg, tx_hash: leg.hash, state: used ? "shallow" : "missing" });
    }
  }
  return lost;
}

/**
 * Sends again the transfers of completed payments carried by a relayer transaction the chain lost, once
 * that nonce is taken again (by the transaction sent again, or by the no-op that replaced it) and the
 * payment's transfer did not move: its call failed in the transaction sent again, or the no-op took its
 * place. Only when every old authorization is expired and unused: they can never move money then, so the
 * new ones cannot pay twice. Bounded: LOST_TXS_PER_PASS lost transactions a pass. Returns how many
 * payments were re-sent.
 */
export async function resendLostLegs(d: LegDeps): Promise<number> {
  const rows = await d.ctx.ledger.kv.withPrefix(LOST_TX_KEY_PREFIX, LOST_TXS_PER_PASS);
  if (rows.length === 0) return 0;
  const taken = await d.chain.client.nonceOf(d.relayer.address, "latest");
  let resent = 0;
  for (const row of rows) {
    const hash = row.key.slice(LOST_TX_KEY_PREFIX.length) as Hex;
    // Nothing at that nonce is mined yet.
    if (Number(row.value) >= taken) continue;
    let settled = true;
    const payments = await d.ctx.ledger.payments.completedPaymentsOfTx(hash);
    for (const p of payments) {
      const r = await resendLeg(d, p, hash);
      if (r === "wait") settled = false;
      if (r === "resent") resent++;
    }
    if (settled) await d.ctx.ledger.kv.delete(row.key);
  }
  return resent;
}

/** A payment's main relayed leg: its transfers, and its new state once they are signed again. */
function relayedMainLeg(p: Payment): { transfers: Authorization[]; patch: (t: RelayedLeg) => PaymentPatch } | undefined {
  if (p.rail === "x402") {
    // Relayed only once sent again (its settlement was lost before).
    const state = x402States.read(p);
    const resent = state.stage === "settled" ? state.resent : undefined;
    if (state.stage !== "settled" || !resent) return undefined;
    return { transfers: resent.transfers, patch: (t) => ({ txHash: t.hash, railState: x402States.write(state.stage, { ...state, resent: { ...resent, transfers: t.auths, relayNonce: t.nonce } }) }) };
  }
  if (p.rail === "fiat") {
    const state = fiatStates.read(p);
    if (state.stage === "held" || state.stage === "payout_created") return undefined;
    return { transfers: state.transfers, patch: (t) => ({ txHash: t.hash, railState: fiatStates.write(state.stage, { ...state, transfers: t.auths, relayNonce: t.nonce }) }) };
  }
  const state = usdcStates.read(p);
  if (state.stage !== "relayed") return undefined;
  return { transfers: state.transfers, patch: (t) => ({ txHash: t.hash, railState: relayedState(state.stage, t) }) };
}

async function resendLeg(d: LegDeps, p: Payment, lostHash: Hex): Promise<"done" | "wait" | "resent"> {
  const leg = relayedMainLeg(p);
  const first = leg?.transfers[0];
  if (!leg || !first) return "done";
  // Moved by another submission of ours.
  if (await d.chain.client.authorizationUsed(first.from, first.nonce)) return "done";
  const now = Math.floor(d.ctx.clock().getTime() / 1000);
  if (leg.transfers.some((t) => Number(t.validBefore) > now)) return "wait";
  d.ctx.logger.error({ payment_id: p.id, project_id: p.projectId, lost_tx: lostHash }, "a completed payment's transfer was lost by the chain and can no longer be mined; signing it again");
  await relayTransfers(d, p, leg.transfers.map((t) => ({ to: t.to, micros: Number(t.value) })), leg.patch);
  return "resent";
}

/** How far back completed x402 payments are looked at: a rollback or reorg takes recent blocks only. */
export const X402_LOST_LOOKBACK_MS = 3_600_000;
/** Completed x402 payments one pass looks at, newest first. */
const X402_PER_PASS = 200;

/**
 * Sends again the settlement of completed x402 payments (the last hour's) that the chain lost: their
 * authorization is not used at the latest block and has expired, so it can never move money and a new
 * one cannot pay twice. Until it expires whoever holds it (the merchant, its facilitator) may still
 * submit it, and we wait. Signed again for exactly the authorization's value to the same `payTo` and
 * relayed; stored with the payment by compare-and-set (onchainLeg.ts), so two processes cannot both
 * send it. From then on the relayer owns the transaction: its gaps are repaired like every other leg's.
 * Returns how many payments were sent again.
 */
export async function resendLostX402Settlements(d: LegDeps): Promise<number> {
  const now = d.ctx.clock();
  const payments = await d.ctx.ledger.payments.recentCompletedX402(new Date(now.getTime() - X402_LOST_LOOKBACK_MS), X402_PER_PASS);
  let resent = 0;
  for (const p of payments) {
    const state = readOrReport(d, p);
    if (!state) continue;
    // Sent again already (the relayer repairs it now), or never settled (nothing to lose).
    if (state.stage !== "settled" || state.resent) continue;
    const auth = state.authorization;
    if (await d.chain.client.authorizationUsed(auth.from, auth.nonce)) continue;
    if (Number(auth.validBefore) > Math.floor(now.getTime() / 1000)) continue;
    d.ctx.logger.error(
      { payment_id: p.id, project_id: p.projectId, lost_tx: state.settlement.txHash },
      "a completed x402 payment's settlement was lost by the chain and its authorization expired unused; paying the merchant again from the wallet",
    );
    try {
      await relayTransfers(d, p, [{ to: auth.to, micros: Number(auth.value) }], (t) => ({
        txHash: t.hash,
        railState: x402States.write(state.stage, { ...state, resent: { lostTxHash: state.settlement.txHash, transfers: t.auths, relayNonce: t.nonce } }),
      }));
      resent++;
    } catch (err) {
      // One payment that cannot be sent now (the relayer busy, another process first) does not hold back
      // the others of the pass; it is looked at again on the next.
      d.ctx.logger.warn({ payment_id: p.id, err }, "sending a lost x402 settlement again failed; retried on the next pass");
    }
  }
  return resent;
}

/** The payment's x402 state; one that does not parse is logged with its id and skipped, never guessed at, and the pass goes on. */
function readOrReport(d: LegDeps, p: Payment): X402State | undefined {
  try {
    return x402States.read(p);
  } catch (err) {
    if (!(err instanceof CorruptRailState)) throw err;
    d.ctx.logger.error({ payment_id: p.id, err: err.message }, "completed x402 payment's rail state does not parse; its settlement is not checked until an operator repairs it");
    return undefined;
  }
}
