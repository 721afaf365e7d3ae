/**
 * What an x402 payment keeps in `rail_state`, stage by stage. Each stage is persisted before the next
 * external call, so a worker resuming after any crash knows exactly what may have left the process:
 * - `held`: amount + fee debited, nothing signed yet;
 * - `signed`: the authorization (with its fresh random nonce) is stored; the merchant may hold it;
 * - `settled`: the authorization was used on-chain by `settlement.txHash`; the fee sweep follows.
 */
import type { Address, Hex } from "viem";
import type { PaymentRow } from "../../ledger/store.ts";
import type { Authorization } from "../eip3009.ts";
import type { SignedAuthorization } from "./signPayment.ts";

export type X402State = {
  stage: "held" | "signed" | "settled";
  x402Version: 1 | 2;
  network: string;
  payTo: Address;
  maxTimeoutSeconds: number;
  /** From `signed` on. */
  authorization?: SignedAuthorization;
  /** A block read before signing: the settlement cannot be earlier, so the log search starts here. */
  fromBlock?: number;
  /** From `settled` on: the transaction that used the authorization, and who told us. */
  settlement?: { txHash: Hex; source: "receipt" | "chain" };
  /**
   * The chain lost the settlement after the payment completed (a rollback deeper than the confirmation
   * depth) and the authorization expired unused: the same transfer to `payTo`, signed again and relayed
   * by us (settlement/lostLegs.ts). The payment's `tx_hash` is then this transaction's.
   */
  resent?: { lostTxHash: Hex | null; transfers: Authorization[]; relayNonce: number };
  /** The relayed fee transfer to the treasury, once signed (see onchainLeg.ts). */
  feeSweep?: { hash: Hex; transfers: Authorization[] };
};

export function x402State(p: PaymentRow): X402State {
  if (!p.rail_state) throw new Error(`x402 payment ${p.id} has no rail_state`);
  return JSON.parse(p.rail_state) as X402State;
}
