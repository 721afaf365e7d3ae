/**
 * The on-chain leg of a payment: USDC leaves the project wallet by EIP-3009 authorizations that the
 * relayer submits in one transaction. Signatures are made only after the hold committed, for at most
 * the held amount, and are stored (with the signed relayer transaction) before anything is broadcast.
 * `check` drives the leg to a final answer after any crash: confirmed, reverted, or expired.
 */
import type { Address, Hex } from "viem";
import type { RailDeps } from "./railDeps.ts";
import type { Payment, PaymentPatch } from "../domain/payment.ts";
import type { Relayer } from "../chain/relayer.ts";
import type { ChainRuntime } from "../chain/runtime.ts";
import { type Authorization, type TransferLog, authorizationUsedIn, randomNonce, signAuthorization, transferLogIn } from "./eip3009.ts";
import { type LegFailure, revertFailure } from "./revertFailure.ts";
import { PermanentFailure } from "./permanentFailure.ts";

/** How long the relayer has to get an authorization mined; past it the leg can be failed safely. */
export const AUTHORIZATION_VALIDITY_SECONDS = 3_600;

/** How old the head block may be when checking a leg's confirmation depth. */
const SHARED_HEAD_MS = 200;

export type Transfer = { to: Address; micros: number };
export type LegStatus = "confirmed" | "reverted" | "expired" | "pending";
/** A relayed leg as signed: its transaction, the relayer nonce it claimed, and the authorizations it carries. */
export type RelayedLeg = { hash: Hex; nonce: number; auths: Authorization[] };

export type LegDeps = { ctx: RailDeps; chain: ChainRuntime; relayer: Relayer };

/**
 * Signs authorizations for `transfers` from the project wallet and stores them, with the signed
 * relayer transaction, through `patch` (which says where in the payment's state they live); then
 * broadcasts. Returns the relayed transaction's hash.
 */
export async function relayTransfers(
  d: LegDeps,
  payment: Payment,
  transfers: Transfer[],
  patch: (t: RelayedLeg) => PaymentPatch,
  o: { refuseFrozen?: boolean } = {},
): Promise<Hex> {
  const auths = await signTransfers(d, payment, transfers, o);
  const tx = await d.relayer.prepare(payment.id, encodeCalls(d, auths), (t) => patch({ hash: t.hash, nonce: t.nonce, auths }), { txHash: payment.txHash, railState: payment.railState });
  await d.relayer.broadcast(tx.raw);
  return tx.hash;
}

/** Authorizations from the project wallet for `transfers` (never more than the payment's hold). */
export async function signTransfers(d: LegDeps, payment: Payment, transfers: Transfer[], o: { refuseFrozen?: boolean } = {}): Promise<Authorization[]> {
  const project = await d.ctx.ledger.projects.get(payment.projectId);
  if (!project) throw new Error(`project ${payment.projectId} missing`);
  // A wallet known frozen cannot move anything: its payment fails now, before any gas is spent on it.
  if (o.refuseFrozen && project.wallet_frozen_at !== null) {
    throw new PermanentFailure(
      "wallet_frozen",
      `USDC's issuer has frozen this project's wallet ${project.wallet_address} (since ${project.wallet_frozen_at}); nothing was sent, the amount and fee were credited back. Payments are refused until the freeze is lifted.`,
    );
  }
  const total = transfers.reduce((s, t) => s + t.micros, 0);
  // Invariant: never sign for more than the hold.
  if (total > payment.amountMicros + payment.feeMicros) throw new Error(`transfers of ${total} exceed hold of payment ${payment.id}`);
  const now = Math.floor(d.ctx.clock().getTime() / 1000);
  const usdc = d.chain.client.usdcAddress;
  const auths: Authorization[] = [];
  for (const t of transfers.filter((x) => x.micros > 0)) {
    auths.push(await signAuthorization(d.ctx.custody, project.wallet_index, { chainId: d.chain.client.settings.chainId, usdc, to: t.to, valueMicros: t.micros, validAfter: 0, validBefore: now + AUTHORIZATION_VALIDITY_SECONDS, nonce: randomNonce() }));
  }
  return auths;
}

/** The relayer calls that submit these authorizations. */
export function encodeCalls(d: LegDeps, auths: Authorization[]) {
  return auths.map((a) => ({
    target: d.chain.client.usdcAddress,
    data: d.chain.client.encodeTransferWithAuthorization({ from: a.from, to: a.to, value: BigInt(a.value), validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore), nonce: a.nonce, signature: a.signature }),
  }));
}

/**
 * The payment's main leg: status → processing with its tx_hash, and the rail state `stateOf` writes
 * (the rail's codec: the authorizations and the relayer nonce in the rail's next stage).
 */
export function startLeg(d: LegDeps, payment: Payment, transfers: Transfer[], stateOf: (t: RelayedLeg) => string): Promise<Hex> {
  return relayTransfers(d, payment, transfers, (t) => ({ status: "processing", txHash: t.hash, railState: stateOf(t) }), { refuseFrozen: true });
}

/**
 * The failure code and message of the payment's main leg that can no longer move the money: expired, or
 * reverted, named by the token's revert reason (revertFailure.ts: `wallet_frozen`, `recipient_blocked`,
 * `token_paused`, …).
 */
export async function legFailure(d: LegDeps, payment: Payment, transfers: Authorization[], status: "reverted" | "expired", to: string): Promise<LegFailure> {
  if (status === "reverted") return revertFailure(d, payment, transfers, payment.txHash, to);
  return { failureCode: "authorization_expired", failureReason: `The transfer authorization to ${to} expired before it was mined; nothing moved, the amount and fee were credited back.` };
}

/**
 * Where the payment's main leg (`transfers`, relayed as its `tx_hash`) stands; `stateOf` is the rail state
 * to store with a resubmission (the same authorizations under a new relayer nonce).
 */
export function checkLeg(d: LegDeps, payment: Payment, transfers: Authorization[], stateOf: (t: { hash: Hex; nonce: number }) => string): Promise<LegStatus> {
  if (!payment.txHash) throw new Error(`payment ${payment.id} has no on-chain leg`);
  return checkRelayed(d, payment, payment.txHash as Hex, transfers, (t) => ({ txHash: t.hash, railState: stateOf(t) }));
}

/**
 * Where each transfer of a confirmed leg is in its transaction `hash`, for the evidence: read from the receipt
 * that confirmed it (shared, so no second lookup); null where the authorization was used by another submission.
 */
export async function legLogs(d: LegDeps, hash: Hex, transfers: Authorization[]): Promise<(TransferLog | null)[]> {
  const receipt = await d.chain.client.sharedReceipt(hash);
  return transfers.map((t) => (receipt?.status === "success" ? (transferLogIn(receipt, d.chain.client.usdcAddress, t) ?? null) : null));
}

/** Where a relayed transaction stands; re-broadcasts the stored transaction when the node lost it. */
export async function checkRelayed(
  d: LegDeps,
  payment: Payment,
  hash: Hex,
  transfers: Authorization[],
  onResubmit: (t: { hash: Hex; nonce: number }) => PaymentPatch,
): Promise<LegStatus> {
  const first = transfers[0];
  const usedOnChain = async () => (first ? d.chain.client.authorizationUsed(first.from, first.nonce) : false);
  // Shared by every payment of a batch: one lookup per transaction and moment, not one per payment.
  const receipt = await d.chain.client.sharedReceipt(hash);
  if (receipt) {
    // The transaction can succeed while this payment's own call failed (each payment of a batch may
    // fail alone), so the payment moved only if its authorization was used in this transaction.
    if (receipt.status === "success" && (!first || authorizationUsedIn(receipt.logs, d.chain.client.usdcAddress, first))) {
      // Shared by the payments polling at once; late by at most that, so confirmation is too.
      const head = await d.chain.client.recentBlockNumber(SHARED_HEAD_MS);
      const depth = head - Number(receipt.blockNumber) + 1;
      return depth >= Math.max(1, d.ctx.config.chain.paymentConfirmations) ? "confirmed" : "pending";
    }
    // Not moved here, but the authorization consumed: another submission of ours moved the money.
    return (await usedOnChain()) ? "confirmed" : "reverted";
  }
  if (await d.chain.client.transactionKnown(hash)) return "pending";
  const validBefore = Math.min(...transfers.map((t) => Number(t.validBefore)));
  if (Math.floor(d.ctx.clock().getTime() / 1000) >= validBefore) return (await usedOnChain()) ? "confirmed" : "expired";
  const stored = await d.ctx.ledger.relayerNonces.transactionByHash(hash);
  if (!stored) throw new Error(`relayed transaction ${hash} of payment ${payment.id} not stored`);
  const chainNonce = await d.chain.client.nonceOf(d.relayer.address, "latest");
  // Our nonce consumed by a transaction we do not know (the relayer key used elsewhere), or the signed bytes
  // forgotten (only a day after they were stored, so not while the authorizations above are valid; gap repair fills
  // that nonce with a no-op): the same authorizations go in a new transaction. They are single-use on-chain, so
  // re-submitting them cannot pay twice.
  if (chainNonce > stored.nonce || stored.raw_tx === null) {
    d.ctx.logger.warn({ payment_id: payment.id, nonce: stored.nonce }, stored.raw_tx === null ? "relayer transaction's bytes forgotten; resubmitting the same authorizations" : "relayer nonce consumed elsewhere; resubmitting the same authorizations");
    const tx = await d.relayer.prepare(payment.id, encodeCalls(d, transfers), (t) => onResubmit({ hash: t.hash, nonce: t.nonce }), { txHash: payment.txHash, railState: payment.railState });
    await d.relayer.broadcast(tx.raw);
    return "pending";
  }
  await d.relayer.broadcast(stored.raw_tx as Hex);
  return "pending";
}
