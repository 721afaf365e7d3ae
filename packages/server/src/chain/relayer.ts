/**
 * The relayer: the service's own account that submits EIP-3009 authorizations (project wallets hold
 * no ETH) and pays gas. Nonces come from a database counter that moves past a nonce in the same
 * atomic write that stores the transaction signed with it, so they stay correct across processes and
 * restarts; recovery re-broadcasts the stored transaction, never a new one for the same nonce.
 *
 * Batching: the steps asked for while a relayer transaction is being prepared go into the next one
 * (at most MAX_BATCH_PAYMENTS payments), so under load one transaction — one nonce, one signature,
 * one commit, one broadcast, one block — carries many payments. Each payment's transfers are one
 * inner Multicall3 `aggregate3` that must succeed as a whole (amount and fee move together or not
 * at all); the outer `aggregate3` lets each payment's inner call fail alone, so one bad
 * authorization never fails the others. A payment's outcome is read from its own
 * `AuthorizationUsed` log in the shared receipt (see `onchainLeg.checkRelayed`).
 *
 * Pace: at most `maxPendingTxs` relayer transactions are signed and not yet mined at any time (the
 * nonce counter minus the chain's nonce, so across processes). A node keeps only so many pending
 * transactions per sender, and a chain mines them in nonce order, so signing further ahead only
 * fills its pool; meanwhile steps wait in the queue and leave in full batches as blocks are mined.
 *
 * Gaps (`closeGaps`): a chain restarted from an earlier state, a reorg or a node dropping a
 * transaction from its pool can lose relayer transactions the database holds as sent. The chain then
 * mines none of the later ones (nonce order), so every payment of every project would wait for ever.
 * Run periodically, `closeGaps` finds the nonces from the chain's pending nonce up to the counter that
 * the node does not know and fills each: with the stored transaction, sent again as it was signed
 * (its payments move then, so a ledger that already counted them becomes true again), or, when that
 * can no longer move anything (every authorization in it expired or used), none is stored, or the node
 * refused those bytes in RESEND_REFUSALS_MAX passes in a row, with a no-op at that nonce (a 0-value transfer to itself), after which the payments it carried are judged
 * by their own authorizations (onchainLeg.checkRelayed, lostLegs.ts).
 */
import { type Address, type Hex, RpcRequestError, decodeFunctionData, encodeFunctionData, parseTransaction } from "viem";
import type { Custody } from "./custody.ts";
import type { Logger } from "pino";
import type { KvStore, NonceStore } from "../ledger/ports.ts";
import type { Payment, PaymentPatch, WaitingCode } from "../domain/payment.ts";
import { MULTICALL3_ADDRESS, multicall3Abi, usdcAbi } from "./chainClient.ts";
import type { ChainRuntime } from "./runtime.ts";
import { type Clock, systemClock } from "../ids.ts";
import { keccak256Of } from "./keccak.ts";

/** Gas allowed per transfer (a transferWithAuthorization uses ~50k), per payment and per transaction; the margin is deliberate. */
const GAS_PER_TRANSFER = 100_000n;
const GAS_PER_PAYMENT = 30_000n;
const GAS_PER_TRANSACTION = 50_000n;
/** At most this many payments in one relayer transaction (≈ 7.7M gas with two transfers each). */
export const MAX_BATCH_PAYMENTS = 32;
const FEE_CACHE_MS = 5_000;
/** Signing again after another process took the nonce: bounded, as every retry means it moved on. */
const NONCE_ATTEMPTS_MAX = 8;
/** While the relayer is at its limit of unconfirmed transactions, the chain's nonce is read again after this long, doubling up to the maximum. */
const ROOM_POLL_MIN_MS = 10;
const ROOM_POLL_MAX_MS = 200;
/** Steps waiting longer than this for room are failed back to their caller (the worker retries them later). */
const ROOM_WAIT_MAX_MS = 15_000;
/** A stored transaction is sent again only if one of its authorizations stays valid at least this long: time to be mined. */
const RESEND_MIN_VALIDITY_S = 30;
/**
 * A stored transaction the node refuses this many gap passes in a row (for a reason other than knowing it or its nonce
 * being taken: a fee below the chain's base fee after a restart, say) is replaced by a no-op at its nonce, as one that
 * can no longer move money is: sending the same bytes again cannot cure a refusal of those bytes.
 */
const RESEND_REFUSALS_MAX = 3;
/** `kv` rows `relayer_lost:<hash>` = nonce: stored transactions the chain lost (sent again or replaced), whose payments are looked at again. */
export const LOST_TX_KEY_PREFIX = "relayer_lost:";
/**
 * A transaction stored less than this long ago is left to its own broadcast, which is under way: gap
 * repair only looks at older ones (and, as later nonces wait behind it, at nothing beyond it).
 */
const GAP_GRACE_MS = 2_000;
/** Gas of the no-op that fills a nonce (a plain transfer). */
const NOOP_GAS = 21_000n;
/**
 * `kv` row `relayer_condition:<address>` (JSON RelayerCondition): what keeps the relayer's transactions from
 * being sent, written when the node first refuses one for it and deleted when one is accepted again. Any
 * process reads it: a waiting payment says why (services/getTransaction.ts), and a gauge fires the alert.
 */
export const RELAYER_CONDITION_KEY_PREFIX = "relayer_condition:";
export const relayerConditionKey = (relayer: Address) => `${RELAYER_CONDITION_KEY_PREFIX}${relayer.toLowerCase()}`;
/** Why relayed payments wait, and since when (ISO 8601). */
export type RelayerCondition = { code: Extract<WaitingCode, "relayer_unfunded">; detail: string; since: string };
/** What keeps the deployment's relayer from sending now, or undefined while it sends (one relayer per deployment). */
export async function relayerCondition(kv: KvStore): Promise<RelayerCondition | undefined> {
  const [row] = await kv.withPrefix(RELAYER_CONDITION_KEY_PREFIX, 1);
  return row ? (JSON.parse(row.value) as RelayerCondition) : undefined;
}

/** A node's refusal of a transaction whose sender cannot pay its gas (geth, anvil, reth word it so). */
const UNFUNDED = /insufficient funds/i;

/** geth's default number of executable transactions per account in its pool (`txpool.accountslots`); config RELAYER_MAX_PENDING_TXS. */
export const RELAYER_MAX_PENDING_TXS = 16;

export type RelayerOptions = {
  /**
   * At most this many relayer transactions signed and not yet mined, across every process sharing
   * the relayer (the nonce counter minus the chain's nonce); further steps wait for room.
   */
  maxPendingTxs?: number;
  /** How long steps may wait for room before they are handed back (RelayerBusyError). */
  roomWaitMaxMs?: number;
  /**
   * The time authorizations and stored transactions are judged by (the deployment's clock). Waits and
   * the fee cache measure real elapsed time and keep Date.now.
   */
  clock?: Clock;
};

export type Call = { target: Address; data: Hex };

/** The payment moved on since the caller read it: another process advanced it. Nothing was stored. */
export class StaleStepError extends Error {
  override name = "StaleStepError";
}

/** The relayer's unconfirmed transactions stayed at its limit for too long; nothing was signed or stored. */
export class RelayerBusyError extends Error {
  override name = "RelayerBusyError";
}

/** What the payment must still hold for this step to be stored (compare-and-set). */
export type Expected = Pick<Payment, "txHash" | "railState">;
export type RelayedTx = { nonce: number; hash: Hex; raw: Hex };
/** What one `closeGaps` pass did: the nonces filled with their stored transaction, and those filled with a no-op (with the lost transaction's hash, if one was stored). */
export type GapRepair = { resent: number[]; replaced: { nonce: number; lostHash: Hex | null }[] };
/** An EIP-3009 authorization inside a relayer transaction, as far as gap repair needs it. */
type CarriedAuthorization = { from: Address; nonce: Hex; validBefore: bigint };

type Step = {
  paymentId: string;
  calls: Call[];
  paymentPatch: (tx: RelayedTx) => PaymentPatch;
  expected: Expected;
  resolve: (tx: RelayedTx) => void;
  reject: (err: unknown) => void;
};

export type Relayer = ReturnType<typeof createRelayer>;

/** The gas limit of a relayer transaction carrying these payments' calls. */
function relayerGasLimit(callsPerPayment: number[]): bigint {
  return callsPerPayment.reduce((g, n) => g + GAS_PER_PAYMENT + GAS_PER_TRANSFER * BigInt(n), GAS_PER_TRANSACTION);
}

/**
 * The authorizations a stored relayer transaction carries, read back from its calldata (the inverse of
 * encodeRelayBatch). Undefined when the calldata is not one of ours: such a transaction is never judged
 * useless.
 */
export function carriedAuthorizations(raw: Hex): CarriedAuthorization[] | undefined {
  try {
    const tx = parseTransaction(raw);
    if (!tx.data) return undefined;
    const outer = decodeFunctionData({ abi: multicall3Abi, data: tx.data });
    const auths: CarriedAuthorization[] = [];
    for (const call of outer.args[0]) {
      const inner = decodeFunctionData({ abi: multicall3Abi, data: call.callData });
      for (const c of inner.args[0]) {
        const t = decodeFunctionData({ abi: usdcAbi, data: c.callData });
        if (t.functionName !== "transferWithAuthorization") return undefined;
        const [from, , , , validBefore, nonce] = t.args;
        auths.push({ from, nonce, validBefore });
      }
    }
    return auths;
  } catch {
    return undefined;
  }
}

/** The relayer transaction's calldata: one outer call per payment (may fail alone), its transfers inside (all or none). */
function encodeRelayBatch(payments: Call[][]): Hex {
  const inner = (calls: Call[]) => encodeFunctionData({ abi: multicall3Abi, functionName: "aggregate3", args: [calls.map((c) => ({ target: c.target, allowFailure: false, callData: c.data }))] });
  return encodeFunctionData({ abi: multicall3Abi, functionName: "aggregate3", args: [payments.map((calls) => ({ target: MULTICALL3_ADDRESS, allowFailure: true, callData: inner(calls) }))] });
}

export function createRelayer(ledger: { relayerNonces: NonceStore; kv: KvStore }, chain: ChainRuntime, logger: Logger, custody: Custody, o: RelayerOptions = {}) {
  const maxPendingTxs = o.maxPendingTxs ?? RELAYER_MAX_PENDING_TXS;
  const roomWaitMaxMs = o.roomWaitMaxMs ?? ROOM_WAIT_MAX_MS;
  const clock = o.clock ?? systemClock;
  // Signs on this thread (see Custody.transactionSigner): the store waits for it, never queued.
  const account = custody.transactionSigner(chain.relayerKey);
  const counterKey = `relayer_nonce:${account.address.toLowerCase()}`;
  let fees: { at: number; maxFeePerGas: bigint; maxPriorityFeePerGas: bigint } | undefined;
  const queue: Step[] = [];
  let flushing = false;
  /** Broadcasts under way, by raw transaction (the same string for every payment of a batch). */
  const sending = new Map<Hex, Promise<void>>();
  /** The chain's nonce of the relayer as last read (only ever rises): transactions below it are mined. */
  let minedNonce = 0;
  const conditionKey = relayerConditionKey(account.address);
  /** Stored transactions the node refused when `closeGaps` sent them again, by hash: passes in a row. Only the last pass's gap is kept. */
  let refusedResends = new Map<string, number>();
  /** What keeps the relayer from sending, as this process last knew it (its `kv` row is read again by closeGaps). */
  let condition: RelayerCondition | undefined;

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
    minedNonce = Math.max(minedNonce, await chain.client.nonceOf(account.address, "latest"));
    const onChain = await chain.client.nonceOf(account.address, "pending");
    await ledger.relayerNonces.raiseCounter(counterKey, onChain);
    return onChain;
  }

  /**
   * Signs one transaction for every member with the counter's next nonce, then stores it in one
   * atomic write (RelayerNonces.store, ledger/relayerNonces.ts): the counter moves past that nonce only if it still
   * stood there (another process may have taken it: then sign again with the next), the signed
   * transaction is kept, and each member's new state is stored. Signing happens before the write, so
   * the write holds no lock while it signs and shares its commit with the other writes of its turn.
   * Returns the members found stale (nothing was stored then; the others are tried again without them).
   * `nonce`: the counter as just read (awaitRoom); after a lost compare-and-set it is read again.
   */
  async function store(members: Step[], nonce: number): Promise<{ tx: RelayedTx } | { stale: Step }> {
    const { maxFeePerGas, maxPriorityFeePerGas } = await currentFees();
    const data = encodeRelayBatch(members.map((m) => m.calls));
    const gas = relayerGasLimit(members.map((m) => m.calls.length));
    for (let attempt = 1; ; attempt++, nonce = await ledger.relayerNonces.counter(counterKey)) {
      const raw = await account.signTransaction({ chainId: chain.client.settings.chainId, type: "eip1559", to: MULTICALL3_ADDRESS, data, nonce, gas, maxFeePerGas, maxPriorityFeePerGas, value: 0n });
      const tx = { nonce, hash: await keccak256Of(raw), raw };
      const r = await ledger.relayerNonces.store({
        counterKey,
        relayer: account.address,
        tx,
        members: members.map((m) => ({ paymentId: m.paymentId, patch: m.paymentPatch(tx), expected: m.expected })),
        at: clock().toISOString(),
      });
      if (r.kind === "stored") return { tx };
      // Compare-and-set: another process stored a step for this payment since we read it; these
      // signatures are never broadcast.
      if (r.kind === "stale") return { stale: members.find((m) => m.paymentId === r.paymentId)! };
      if (attempt >= NONCE_ATTEMPTS_MAX) throw new Error(`relayer nonce taken by another process ${attempt} times in a row`);
    }
  }

  /**
   * Waits until fewer than `maxPendingTxs` relayer transactions are not yet mined (the header's
   * "Pace"); returns the counter's next nonce then, or undefined once `roomWaitMaxMs` has passed.
   */
  async function awaitRoom(): Promise<number | undefined> {
    const deadline = Date.now() + roomWaitMaxMs;
    for (let pollMs = ROOM_POLL_MIN_MS; ; pollMs = Math.min(ROOM_POLL_MAX_MS, pollMs * 2)) {
      const next = await ledger.relayerNonces.counter(counterKey);
      if (next - minedNonce < maxPendingTxs) return next;
      minedNonce = Math.max(minedNonce, await chain.client.nonceOf(account.address, "latest"));
      if (next - minedNonce < maxPendingTxs) return next;
      if (Date.now() >= deadline) return undefined;
      await new Promise((r) => setTimeout(r, pollMs));
    }
  }

  async function flush(): Promise<void> {
    flushing = true;
    try {
      while (queue.length) {
        let nonce: number | undefined;
        let unread: unknown;
        try {
          nonce = await awaitRoom();
        } catch (err) {
          unread = err;
        }
        if (nonce === undefined) {
          // The chain is not mining ours, or its nonce cannot be read: the steps go back to their
          // callers (the worker retries them) instead of waiting here without bound.
          const waiting = queue.splice(0);
          logger.warn({ err: unread, steps: waiting.length, max_pending_txs: maxPendingTxs }, "relayer transactions are not being mined; payment steps handed back for a later retry");
          const err = new RelayerBusyError(`the relayer has ${maxPendingTxs} transactions not yet mined`, unread === undefined ? {} : { cause: unread });
          for (const m of waiting) m.reject(err);
          break;
        }
        let members = queue.splice(0, MAX_BATCH_PAYMENTS);
        while (members.length) {
          try {
            const r = await store(members, nonce);
            if ("tx" in r) {
              for (const m of members) m.resolve(r.tx);
              break;
            }
            r.stale.reject(new StaleStepError(`payment ${r.stale.paymentId} was advanced by another process`));
            members = members.filter((m) => m !== r.stale);
          } catch (err) {
            for (const m of members) m.reject(err);
            break;
          }
        }
      }
    } finally {
      flushing = false;
    }
  }

  /**
   * Stores a signed relayer transaction carrying `calls` (all or none) with the payment's new state,
   * batched with the other payments asked for meanwhile. Resolves once it is committed; throws
   * StaleStepError (nothing stored) when the payment no longer matches `expected`.
   */
  function prepare(paymentId: string, calls: Call[], paymentPatch: (tx: RelayedTx) => PaymentPatch, expected: Expected): Promise<RelayedTx> {
    return new Promise((resolve, reject) => {
      queue.push({ paymentId, calls, paymentPatch, expected, resolve, reject });
      // Started on the next turn so the steps of this one share the transaction; while a batch is
      // being stored, the loop in `flush` takes what arrived meanwhile.
      if (!flushing && queue.length === 1) setImmediate(() => void (flushing || flush()));
    });
  }

  /** Sends a stored transaction, once at a time per transaction however many payments it carries. "Already known" and "nonce too low" are answered by the receipt check later. */
  function broadcast(raw: Hex): Promise<void> {
    let p = sending.get(raw);
    if (!p) {
      p = send(raw).then(() => undefined).finally(() => sending.delete(raw));
      sending.set(raw, p);
    }
    return p;
  }

  /** `refused`: the node answered with a refusal of these bytes that none of the cases above names (a dropped connection is not one). */
  async function send(raw: Hex): Promise<"sent" | "known" | "unfunded" | "refused" | "unreachable"> {
    try {
      await chain.client.sendRaw(raw);
    } catch (err) {
      const msg = String((err as Error).message ?? err);
      if (/already known|nonce too low|known transaction|replacement transaction underpriced/i.test(msg)) return "known";
      if (UNFUNDED.test(msg)) return void (await noteUnfunded()), "unfunded";
      // The node's own words (viem's `details`), not the start of the message, which is the request's body.
      const details = (err as { details?: unknown }).details;
      logger.warn({ err: (typeof details === "string" ? details : msg).slice(0, 300) }, "broadcast failed; the worker will retry");
      return (err as { walk?: (fn: (e: unknown) => boolean) => unknown }).walk?.((e) => e instanceof RpcRequestError) ? "refused" : "unreachable";
    }
    if (condition) await noteFunded();
    return "sent";
  }

  /**
   * The node refused a transaction for its gas: payments wait (their transactions are stored and sent again
   * by the worker and `closeGaps`), and this is said once per change, not at every retry. The first process
   * to see it sets `since`; the others keep it.
   */
  async function noteUnfunded(): Promise<void> {
    if (condition) return;
    const seen: RelayerCondition = {
      code: "relayer_unfunded",
      detail: `The service's relayer (${account.address}) has too little ETH to pay gas: USDC and bank payments wait, nothing is lost, and they go on once it is funded.`,
      since: clock().toISOString(),
    };
    condition = JSON.parse(await ledger.kv.claim(conditionKey, JSON.stringify(seen))) as RelayerCondition;
    logger.error({ relayer: account.address, since: condition.since }, "the relayer cannot pay gas: relayed payments wait until it is funded (agentwallet doctor shows its balance)");
  }

  async function noteFunded(): Promise<void> {
    const since = condition?.since;
    condition = undefined;
    await ledger.kv.delete(conditionKey);
    logger.warn({ relayer: account.address, since }, "the relayer pays gas again: waiting payments go on");
  }

  /**
   * Whether sending this stored transaction again could still move money: one of its authorizations
   * is valid long enough to be mined and not used yet. Unknown calldata counts as useful.
   */
  async function mayStillMove(raw: Hex): Promise<boolean> {
    const auths = carriedAuthorizations(raw);
    if (!auths) return true;
    const soonest = BigInt(Math.floor(clock().getTime() / 1000) + RESEND_MIN_VALIDITY_S);
    for (const a of auths) if (a.validBefore > soonest && !(await chain.client.authorizationUsed(a.from, a.nonce))) return true;
    return false;
  }

  /** A 0-value transfer to itself at `nonce`: takes the nonce and moves nothing. */
  async function sendNoop(nonce: number): Promise<void> {
    const { maxFeePerGas, maxPriorityFeePerGas } = await currentFees();
    const raw = await account.signTransaction({ chainId: chain.client.settings.chainId, type: "eip1559", to: account.address, value: 0n, nonce, gas: NOOP_GAS, maxFeePerGas, maxPriorityFeePerGas });
    await send(raw);
  }

  /**
   * Fills the nonces the node lost between the chain's pending nonce and the counter (the header's
   * "Gaps"). Bounded: at most `maxPendingTxs` nonces a pass, in nonce order (the next pass goes on
   * once they are mined); one RPC for the chain's nonce and one counter read when there is no gap.
   */
  async function closeGaps(): Promise<GapRepair> {
    const done: GapRepair = { resent: [], replaced: [] };
    // Another process may have seen the relayer unfunded (or funded again) since: this one's next send then says when it changes.
    const stored = await ledger.kv.get(conditionKey);
    condition = stored === undefined ? undefined : (JSON.parse(stored) as RelayerCondition);
    const latest = await chain.client.nonceOf(account.address, "latest");
    // May move down: a rollback or reorg took mined transactions of ours away.
    minedNonce = latest;
    const next = await ledger.relayerNonces.counter(counterKey);
    if (next <= latest) {
      refusedResends.clear();
      return done;
    }
    const pending = await chain.client.nonceOf(account.address, "pending");
    const refused = new Map<string, number>();
    for (let nonce = pending; nonce < Math.min(next, pending + maxPendingTxs); nonce++) {
      const row = await ledger.relayerNonces.transactionAt(account.address, nonce);
      if (row && clock().getTime() - Date.parse(row.created_at) < GAP_GRACE_MS) break;
      // Below `pending` nothing is missing; above it a transaction may wait in the pool for the gap.
      if (row && nonce > pending && (await chain.client.transactionKnown(row.tx_hash as Hex))) continue;
      // Recorded first, sent again or replaced: once the nonce is taken, the completed payments it carried
      // are checked against the chain and signed again if their transfer did not move (settlement/lostLegs.ts).
      if (row) await ledger.kv.set(`${LOST_TX_KEY_PREFIX}${row.tx_hash}`, String(nonce));
      // Signed bytes forgotten (a day after they were stored) carried only authorizations long expired: a no-op.
      const refusals = row ? (refusedResends.get(row.tx_hash) ?? 0) : 0;
      if (row?.raw_tx && refusals < RESEND_REFUSALS_MAX && (await mayStillMove(row.raw_tx as Hex))) {
        if ((await send(row.raw_tx as Hex)) === "refused") refused.set(row.tx_hash, refusals + 1);
        done.resent.push(nonce);
      } else {
        await sendNoop(nonce);
        done.replaced.push({ nonce, lostHash: (row?.tx_hash as Hex | undefined) ?? null });
      }
    }
    refusedResends = refused;
    if (done.resent.length) logger.warn({ nonces: done.resent, chain_nonce: latest }, "relayer transactions lost by the chain were sent again");
    if (done.replaced.length) logger.error({ replaced: done.replaced, chain_nonce: latest }, "relayer transactions lost by the chain could no longer move money; their nonces were filled with a no-op");
    return done;
  }

  return { address: account.address, syncNonce, prepare, broadcast, closeGaps };
}
