/**
 * Where a signed x402 authorization stands on-chain. The merchant's word is never enough: a receipt
 * header's transaction must carry USDC's `AuthorizationUsed(payer, nonce)` event, and without a
 * receipt the authorization's own state decides: used (found with its transaction by that event),
 * or provably never usable because a block deep enough has a timestamp at or past `validBefore`
 * (USDC requires `block.timestamp < validBefore`).
 */
import { decodePaymentResponseHeader } from "@x402/core/http";
import type { Hex, PublicClient } from "viem";
import type { ChainRuntime } from "../../chain/runtime.ts";
import { usdcAbi } from "../../chain/chainClient.ts";
import { type TransferLog, authorizationUsedEvent, authorizationUsedIn, transferLogIn } from "../eip3009.ts";
import type { SignedAuthorization } from "./signPayment.ts";


/** The settlement a merchant reports in `PAYMENT-RESPONSE` (v2) or `X-PAYMENT-RESPONSE` (v1). */
export type ReportedSettlement = { success: boolean; transaction: string | undefined };

export function readSettlementHeader(headers: Readonly<Record<string, string>>): ReportedSettlement | undefined {
  const value = headers["payment-response"] ?? headers["x-payment-response"];
  if (!value) return undefined;
  try {
    const decoded = decodePaymentResponseHeader(value) as { success?: unknown; transaction?: unknown };
    return { success: decoded.success === true, transaction: typeof decoded.transaction === "string" ? decoded.transaction : undefined };
  } catch {
    return undefined;
  }
}

export type { TransferLog };

/**
 * Whether `hash` is a successful transaction that used exactly this authorization of our USDC (undefined
 * when not), with the position of its `Transfer` log, read from the one receipt that proves it.
 */
export async function settlementLog(chain: ChainRuntime, hash: string, auth: SignedAuthorization): Promise<{ log: TransferLog | undefined } | undefined> {
  if (!/^0x[0-9a-fA-F]{64}$/.test(hash)) return undefined;
  const receipt = await chain.client.receipt(hash as Hex);
  if (receipt?.status !== "success" || !authorizationUsedIn(receipt.logs, chain.client.usdcAddress, auth)) return undefined;
  return { log: transferLogIn(receipt, chain.client.usdcAddress, auth) };
}

export type AuthorizationStanding =
  | { kind: "used"; txHash: Hex | undefined }
  /** Unused at a block at least `confirmations` deep whose timestamp is at or past validBefore. */
  | { kind: "expired" }
  | { kind: "open"; secondsLeft: number };

/**
 * Reads the authorization's state and, when used, finds its transaction by the `AuthorizationUsed`
 * event from `fromBlock` (a block read before signing) on, `maxBlocksPerQuery` at a time.
 */
export async function authorizationStanding(
  chain: ChainRuntime,
  auth: SignedAuthorization,
  o: { fromBlock: number; confirmations: number; maxBlocksPerQuery: number; nowMs: number },
): Promise<AuthorizationStanding> {
  const rpc = chain.client.client as PublicClient;
  if (await chain.client.authorizationUsed(auth.from, auth.nonce)) {
    return { kind: "used", txHash: await findAuthorizationTx(chain, auth, o.fromBlock, o.maxBlocksPerQuery) };
  }
  const validBefore = Number(auth.validBefore);
  const head = await chain.client.blockNumber();
  const finalNumber = head - Math.max(1, o.confirmations) + 1;
  if (finalNumber >= 0) {
    const block = await rpc.getBlock({ blockNumber: BigInt(finalNumber) });
    if (Number(block.timestamp) >= validBefore) {
      const usedThen = await rpc.readContract({ address: chain.client.usdcAddress, abi: usdcAbi, functionName: "authorizationState", args: [auth.from, auth.nonce], blockNumber: BigInt(finalNumber) });
      // Used between that block and the head is impossible: the head said unused a moment ago.
      if (!usedThen) return { kind: "expired" };
    }
  }
  return { kind: "open", secondsLeft: Math.max(0, validBefore - Math.floor(o.nowMs / 1000)) };
}

async function findAuthorizationTx(chain: ChainRuntime, auth: SignedAuthorization, fromBlock: number, maxBlocksPerQuery: number): Promise<Hex | undefined> {
  const head = await chain.client.blockNumber();
  for (let start = Math.max(0, fromBlock); start <= head; start += maxBlocksPerQuery) {
    const logs = await (chain.client.client as PublicClient).getLogs({
      address: chain.client.usdcAddress,
      event: authorizationUsedEvent,
      args: { authorizer: auth.from, nonce: auth.nonce },
      fromBlock: BigInt(start),
      toBlock: BigInt(Math.min(head, start + maxBlocksPerQuery - 1)),
    });
    const hit = logs.find((l) => l.transactionHash);
    if (hit) return hit.transactionHash!;
  }
  return undefined;
}
