/**
 * Relayed legs of completed payments that the chain no longer has. A payment is counted `completed`
 * once its relayer transaction is PAYMENT_CONFIRMATIONS deep; a rollback deeper than that (a chain
 * restarted from an earlier state, a deep reorg) can take the transaction away again. The relayer
 * sends the stored transaction again while its authorizations are valid (relayer.ts, "Gaps"); when
 * they expired unmined and the relayer filled the nonce with a no-op, `resendLostLegs` signs the same
 * transfers again, so the chain comes to hold what the ledger says was paid. `findLostLegs` is the
 * loud check behind `reconcile`: completed payments whose transfer is not on the chain at the
 * confirmation depth.
 */
import type { Hex } from "viem";
import type { ChainClient } from "../chain/chainClient.ts";
import { LOST_TX_KEY_PREFIX } from "../chain/relayer.ts";
import type { Ledger, PaymentRow } from "../ledger/store.ts";
import type { Authorization } from "./eip3009.ts";
import { type LegDeps, legState, relayTransfers } from "./onchainLeg.ts";

/** Completed payments one `findLostLegs` looks at, most recently completed first: a rollback only takes recent blocks. */
export const LOST_LEG_CHECK_MAX = 1_000;
/** Lost transactions whose payments one `resendLostLegs` pass looks at (the rest wait for the next pass). */
const LOST_TXS_PER_PASS = 16;

/** `missing`: not used at the latest block; `shallow`: used, but not yet as deep as a payment needs to complete. */
export type LostLeg = { payment_id: string; project_id: string; rail: string; leg: "transfer" | "fee_sweep"; tx_hash: string; state: "missing" | "shallow" };

type RelayedLeg = { leg: LostLeg["leg"]; hash: string; transfers: Authorization[] };

/** The relayed legs a payment records: its main transfer (usdc_transfer, fiat) and its fee sweep (fiat, x402). */
function relayedLegs(p: PaymentRow): RelayedLeg[] {
  if (!p.rail_state) return [];
  const s = JSON.parse(p.rail_state) as { transfers?: Authorization[]; feeSweep?: { hash: string; transfers?: Authorization[] } };
  const legs: RelayedLeg[] = [];
  if (p.rail !== "x402" && p.tx_hash && s.transfers?.length) legs.push({ leg: "transfer", hash: p.tx_hash, transfers: s.transfers });
  if (s.feeSweep?.transfers?.length) legs.push({ leg: "fee_sweep", hash: s.feeSweep.hash, transfers: s.feeSweep.transfers });
  return legs;
}

/**
 * Completed payments (the `limit` most recently completed) whose relayed transfer is not on the chain
 * at the confirmation depth. A leg is judged by its first authorization (a leg's transfers move
 * together or not at all), so a transfer moved by a resubmission under another hash counts as moved.
 */
export async function findLostLegs(ledger: Ledger, client: ChainClient, confirmations: number, limit = LOST_LEG_CHECK_MAX): Promise<LostLeg[]> {
  const head = await client.blockNumber();
  const deep = Math.max(0, head - Math.max(1, confirmations) + 1);
  const payments = await ledger.db.selectFrom("payments").selectAll().where("status", "=", "completed").where("rail_state", "is not", null).orderBy("completed_at", "desc").limit(limit).execute();
  const lost: LostLeg[] = [];
  for (const p of payments) {
    for (const leg of relayedLegs(p)) {
      const a = leg.transfers[0]!;
      if (await client.authorizationUsed(a.from, a.nonce, deep)) continue;
      const used = deep < head && (await client.authorizationUsed(a.from, a.nonce));
      lost.push({ payment_id: p.id, project_id: p.project_id, rail: p.rail, leg: leg.leg, tx_hash: leg.hash, state: used ? "shallow" : "missing" });
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
  const rows = await d.ctx.ledger.db.selectFrom("kv").select(["key", "value"]).where("key", "like", `${LOST_TX_KEY_PREFIX}%`).limit(LOST_TXS_PER_PASS).execute();
  if (rows.length === 0) return 0;
  const taken = await d.chain.client.nonceOf(d.relayer.address, "latest");
  let resent = 0;
  for (const row of rows) {
    const hash = row.key.slice(LOST_TX_KEY_PREFIX.length) as Hex;
    // Nothing at that nonce is mined yet.
    if (Number(row.value) >= taken) continue;
    let settled = true;
    const payments = await d.ctx.ledger.db.selectFrom("payments").selectAll().where("tx_hash", "=", hash).where("status", "=", "completed").execute();
    for (const p of payments) {
      const r = await resendLeg(d, p, hash);
      if (r === "wait") settled = false;
      if (r === "resent") resent++;
    }
    if (settled) await d.ctx.ledger.db.deleteFrom("kv").where("key", "=", row.key).execute();
  }
  return resent;
}

async function resendLeg(d: LegDeps, p: PaymentRow, lostHash: Hex): Promise<"done" | "wait" | "resent"> {
  const state = legState(p);
  const first = state?.transfers[0];
  if (!state || !first) return "done";
  // Moved by another submission of ours.
  if (await d.chain.client.authorizationUsed(first.from, first.nonce)) return "done";
  const now = Math.floor(d.ctx.clock().getTime() / 1000);
  if (state.transfers.some((t) => Number(t.validBefore) > now)) return "wait";
  d.ctx.logger.error({ payment_id: p.id, project_id: p.project_id, lost_tx: lostHash }, "a completed payment's transfer was lost by the chain and can no longer be mined; signing it again");
  await relayTransfers(d, p, state.transfers.map((t) => ({ to: t.to, micros: Number(t.value) })), (t) => ({
    tx_hash: t.hash,
    rail_state: JSON.stringify({ ...state, transfers: t.auths, relayNonce: t.nonce }),
  }));
  return "resent";
}
