/**
 * The relayer: the service's own account that submits EIP-3009 authorizations (project wallets hold
 * no ETH) and pays gas. Nonces are allocated from a database counter in the same transaction that
 * stores the signed raw transaction, so they stay correct across processes and restarts; recovery
 * re-broadcasts the stored transaction, never a new one for the same nonce. Several transfers of
 * one payment go in one Multicall3 `aggregate3` call, so amount and fee move together or not at all.
 */
import { type Address, type Hex, encodeFunctionData, keccak256 } from "viem";
import type { Custody } from "./custody.ts";
import type { Logger } from "pino";
import type { Ledger } from "../ledger/store.ts";
import { MULTICALL3_ADDRESS, multicall3Abi } from "./chainClient.ts";
import type { ChainRuntime } from "./runtime.ts";

/** Two transferWithAuthorization calls through Multicall3 use ~110k gas; the margin is deliberate. */
export const RELAYER_GAS_LIMIT = 250_000n;
const FEE_CACHE_MS = 5_000;

export type Call = { target: Address; data: Hex };

/** The payment moved on since the caller read it: another process advanced it. Nothing was stored. */
export class StaleStepError extends Error {
  override name = "StaleStepError";
}

/** What the payment row must still hold for this step to be stored (compare-and-set). */
export type Expected = { tx_hash: string | null; rail_state: string | null };
export type RelayedTx = { nonce: number; hash: Hex; raw: Hex };

export type Relayer = ReturnType<typeof createRelayer>;

export function createRelayer(ledger: Ledger, chain: ChainRuntime, logger: Logger, custody: Custody) {
  // Signs on this thread (see Custody.transactionSigner): inside the nonce transaction, never queued.
  const account = custody.transactionSigner(chain.relayerKey);
  const counterKey = `relayer_nonce:${account.address.toLowerCase()}`;
  let fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;

  async function currentFees() {
    if (!fees || Date.now() - fees.at > FEE_CACHE_MS) {
      const f = await chain.client.fees();
      // Headroom over the estimate so a stored transaction stays includable while the base fee moves.
      fees = { at: Date.now(), maxFeePerGas: f.maxFeePerGas * 2n, maxPriorityFeePerGas: f.maxPriorityFeePerGas };
    }
    return fees;
  }

  /** Brings the counter up to the chain's pending nonce (never down). Called at start-up. */
  async function syncNonce(): Promise<number> {
    const onChain = await chain.client.nonceOf(account.address, "pending");
    await ledger.db.insertInto("kv").values({ key: counterKey, value: String(onChain) }).onConflict((oc) => oc.column("key").doNothing()).execute();
    // Conditional, so a concurrent allocation in another process is never moved backwards.
    await ledger.db
      .updateTable("kv")
      .set({ value: String(onChain) })
      .where("key", "=", counterKey)
      .where((eb) => eb(eb.cast("value", "integer"), "<", onChain))
      .execute();
    return onChain;
  }

  /**
   * Allocates a nonce, signs the batch and stores it with the payment's new state in one database
   * transaction. Signing is local CPU work; no network I/O happens inside the transaction.
   */
  async function prepare(paymentId: string, calls: Call[], paymentPatch: (tx: RelayedTx) => Record<string, unknown>, expected: Expected): Promise<RelayedTx> {
    const { maxFeePerGas, maxPriorityFeePerGas } = await currentFees();
    const data = encodeFunctionData({ abi: multicall3Abi, functionName: "aggregate3", args: [calls.map((c) => ({ target: c.target, allowFailure: false, callData: c.data }))] });
    return ledger.db.transaction().execute(async (trx) => {
      await trx.insertInto("kv").values({ key: counterKey, value: "0" }).onConflict((oc) => oc.column("key").doNothing()).execute();
      const counter = await trx
        .updateTable("kv")
        .set((eb) => ({ value: eb.cast(eb(eb.cast("value", "integer"), "+", 1), "text") as never }))
        .where("key", "=", counterKey)
        .returning("value")
        .executeTakeFirstOrThrow();
      const nonce = Number(counter.value) - 1;
      const raw = await account.signTransaction({
        chainId: chain.client.settings.chainId,
        type: "eip1559",
        to: MULTICALL3_ADDRESS,
        data,
        nonce,
        gas: RELAYER_GAS_LIMIT,
        maxFeePerGas,
        maxPriorityFeePerGas,
        value: 0n,
      });
      const hash = keccak256(raw);
      await trx.insertInto("relayer_txs").values({ nonce, relayer: account.address, payment_id: paymentId, raw_tx: raw, tx_hash: hash, created_at: new Date().toISOString() }).execute();
      // Compare-and-set: if another process stored a step for this payment since we read it, roll
      // back everything (the nonce too); our signatures are never broadcast.
      const stored = await trx
        .updateTable("payments")
        .set({ ...paymentPatch({ nonce, hash, raw }), updated_at: new Date().toISOString() })
        .where("id", "=", paymentId)
        .where("tx_hash", expected.tx_hash === null ? "is" : "=", expected.tx_hash)
        .where("rail_state", expected.rail_state === null ? "is" : "=", expected.rail_state)
        .executeTakeFirst();
      if (stored.numUpdatedRows !== 1n) throw new StaleStepError(`payment ${paymentId} was advanced by another process`);
      await trx.updateTable("transactions").set({ status: "processing" }).where("payment_id", "=", paymentId).where("status", "=", "pending").execute();
      return { nonce, hash, raw };
    });
  }

  /** Sends a stored transaction. "Already known" and "nonce too low" are answered by the receipt check later. */
  async function broadcast(raw: Hex): Promise<void> {
    try {
      await chain.client.sendRaw(raw);
    } catch (err) {
      const msg = String((err as Error).message ?? err);
      if (/already known|nonce too low|known transaction|replacement transaction underpriced/i.test(msg)) return;
      logger.warn({ err: msg.slice(0, 300) }, "broadcast failed; the worker will retry");
    }
  }

  return { address: account.address, syncNonce, prepare, broadcast };
}
