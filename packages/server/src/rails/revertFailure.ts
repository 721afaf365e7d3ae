/**
 * Why a payment's transfer reverted on-chain, named for programs (`failure_code`) and people
 * (`failure_message`). A relayer transaction lets each payment's call fail alone, so its receipt says
 * nothing of one payment's reason: each authorization is run again (`eth_call`) at the block it reverted
 * in, and the token's revert reason read. Circle's USDC says "Blacklistable: account is blacklisted" for
 * either party, so `isBlacklisted` tells the project's wallet (`wallet_frozen`, and the wallet is marked
 * frozen at once: walletFreeze.ts) from the recipient (`recipient_blocked`). A reason not known here keeps
 * the generic `onchain_reverted`, with the token's words in the message.
 */
import type { Hex } from "viem";
import type { FailureCode } from "../ledger/failureCodes.ts";
import type { Payment } from "../domain/payment.ts";
import type { Authorization } from "./eip3009.ts";
import type { RailDeps } from "./railDeps.ts";
import type { ChainRuntime } from "../chain/runtime.ts";
import { recordWalletFreeze } from "./walletFreeze.ts";

export type LegFailure = { failureCode: FailureCode; failureReason: string };
/** What the diagnosis reads and writes (a leg's deps have it). */
export type RevertDeps = { ctx: RailDeps; chain: ChainRuntime };

const CREDITED = "the amount and fee were credited back";

/** The failure of a leg whose transfers reverted in `txHash`; `to` names the payee in words ("the recipient"). */
export async function revertFailure(d: RevertDeps, payment: Payment, transfers: Authorization[], txHash: string | null, to: string): Promise<LegFailure> {
  const where = txHash ? ` in transaction ${txHash}` : "";
  const generic = (said?: string): LegFailure => ({
    failureCode: "onchain_reverted",
    failureReason: `The USDC transfer to ${to} reverted on-chain${where}${said ? ` (the token answered "${said}")` : ""} and moved nothing; ${CREDITED}.`,
  });
  const receipt = txHash ? await d.chain.client.sharedReceipt(txHash as Hex) : undefined;
  const block = receipt ? Number(receipt.blockNumber) : undefined;
  let reason: string | undefined;
  let failed: Authorization | undefined;
  for (const a of transfers) {
    const data = d.chain.client.encodeTransferWithAuthorization({ from: a.from, to: a.to, value: BigInt(a.value), validAfter: BigInt(a.validAfter), validBefore: BigInt(a.validBefore), nonce: a.nonce, signature: a.signature });
    reason = await d.chain.client.revertReason(data, block);
    if (reason !== undefined) {
      failed = a;
      break;
    }
  }
  if (!reason || !failed) return generic();
  const said = reason.replace(/\.$/, "");
  if (/blacklisted/i.test(reason)) {
    if (await d.chain.client.isBlacklisted(failed.from)) {
      const project = await d.ctx.ledger.projects.get(payment.projectId);
      if (project?.wallet_address) await recordWalletFreeze(d.ctx, { id: project.id, wallet_address: project.wallet_address }, true, `payment ${payment.id}`);
      return {
        failureCode: "wallet_frozen",
        failureReason: `The USDC transfer to ${to} reverted on-chain${where}: USDC's issuer has frozen this project's wallet ${failed.from} (the token answered "${said}"). It moved nothing; ${CREDITED}. Payments are refused until the freeze is lifted; retrying will not help.`,
      };
    }
    if (await d.chain.client.isBlacklisted(failed.to)) {
      return {
        failureCode: "recipient_blocked",
        failureReason: `The USDC transfer to ${to} reverted on-chain${where}: USDC's issuer has blocked the address ${failed.to} (the token answered "${said}"), so no USDC can be sent to it. It moved nothing; ${CREDITED}. Pay another address.`,
      };
    }
  }
  if (/paused/i.test(reason)) {
    return {
      failureCode: "token_paused",
      failureReason: `The USDC transfer to ${to} reverted on-chain${where}: USDC is paused by its issuer (the token answered "${said}") and no USDC moves until it is unpaused. It moved nothing; ${CREDITED}. Pay again once USDC is unpaused.`,
    };
  }
  if (/exceeds balance/i.test(reason)) {
    return {
      failureCode: "wallet_underfunded",
      failureReason: `The USDC transfer to ${to} reverted on-chain${where}: the project wallet ${failed.from} held less USDC than it (the token answered "${said}"). It moved nothing; ${CREDITED}. The ledger counts more than the wallet holds: ask the operator to run \`agentwallet reconcile\`.`,
    };
  }
  return generic(said);
}
