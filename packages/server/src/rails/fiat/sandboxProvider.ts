/**
 * The sandbox ACH off-ramp. It behaves like a real one: it has a deposit address on the chain (the
 * USDC for each payout really arrives there), accepts a payout, reports `processing`, completes after
 * a configurable delay, and delivers each outcome as a Standard Webhooks–signed POST to the service's
 * `/v1/webhooks/fiat`, the path a real provider's webhook uses. On a failure or a return it sends the
 * USDC back to the project wallet on-chain, as an off-ramp refund would.
 *
 * Test account numbers (any routing number):
 *   1111000000  → the payout fails (R03 "No account / unable to locate account")
 *   2222000000  → the payout completes, then is returned (R01 "Insufficient funds")
 *   anything else completes.
 */
import { randomBytes } from "node:crypto";
import type { Logger } from "pino";
import { Webhook } from "standardwebhooks";
import { type Address, type Hex, createWalletClient, encodeFunctionData, http, keccak256, parseTransaction } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import type { ChainClient } from "../../chain/chainClient.ts";
import { usdcAbi } from "../../chain/chainClient.ts";
import type { KvStore } from "../../ledger/ports.ts";
import type { FiatProvider, Payout, PayoutStatus } from "./provider.ts";

export const SANDBOX_FAIL_ACCOUNT = "1111000000";
export const SANDBOX_RETURN_ACCOUNT = "2222000000";
/** The sandbox off-ramp refuses payouts to this account itself (refunding the USDC), as a provider refuses bank details. */
export const SANDBOX_REFUSE_ACCOUNT = "3333000000";

/** What a test account number makes the sandbox do; the number itself is never kept (only its last four digits). */
export type SandboxOutcome = "complete" | "fail" | "refuse" | "return";

export function sandboxOutcomeOf(accountNumber: string): SandboxOutcome {
  return accountNumber === SANDBOX_FAIL_ACCOUNT ? "fail" : accountNumber === SANDBOX_REFUSE_ACCOUNT ? "refuse" : accountNumber === SANDBOX_RETURN_ACCOUNT ? "return" : "complete";
}

type Stored = Payout & {
  amountCents: number;
  outcome: SandboxOutcome;
  /** `****` and the last four digits, for a person reading the row. */
  accountNumber: string;
  refundAddress: Address;
  dueAt: number;
  returnAt: number | null;
  /** The refund's signed transaction and its hash, stored before it is sent (see refund). */
  refundTx: string | null;
  refundRaw?: Hex | null;
  refunded?: boolean;
  delivered: PayoutStatus | null;
};

export type SandboxFiatProvider = FiatProvider & { depositAddress: Address; tick(): Promise<void>; setWebhookUrl(url: string): void };

/** Payouts a tick reads at most; the next tick goes on from the last one (`payoutsPerTick` in tests). */
const PAYOUTS_PER_TICK = 1_000;

/** How long a refund's receipt is waited for before the tick goes on (the next tick looks again). */
const REFUND_WAIT_MS = 15_000;

export function createSandboxFiatProvider(deps: {
  ledger: { kv: KvStore };
  chain: ChainClient;
  privateKey: Hex;
  webhookSecret: string;
  delayMs: number;
  logger: Logger;
  payoutsPerTick?: number;
  refundWaitMs?: number;
}): SandboxFiatProvider {
  const account = privateKeyToAccount(deps.privateKey);
  const wallet = createWalletClient({ account, chain: deps.chain.chain, transport: http(deps.chain.settings.rpcUrl, { timeout: 10_000 }) });
  const key = (id: string) => `sandbox_payout:${id}`;
  const refKey = (ref: string) => `sandbox_payout_ref:${ref}`;
  let webhookUrl: string | undefined;
  /** Where the next tick goes on reading payouts (undefined: from the first). */
  let cursor: string | undefined;

  const load = async (id: string) => {
    const v = await deps.ledger.kv.get(key(id));
    return v ? (JSON.parse(v) as Stored) : undefined;
  };
  const save = (p: Stored) => deps.ledger.kv.set(key(p.payoutId), JSON.stringify(p));
  const view = (p: Stored): Payout => ({
    payoutId: p.payoutId,
    reference: p.reference,
    status: p.status,
    reason: p.reason,
    ...(p.refused ? { refused: true } : {}),
    ...(p.refunded && p.refundTx ? { refundTxHash: p.refundTx.toLowerCase() } : {}),
  });

  /**
   * Sends the payout's USDC back, once. The transaction is signed and stored before it is sent, so a
   * retry after a lost answer (an RPC error, a timeout, a crash) sends that same transaction again and
   * never a second refund; only a stored transaction whose nonce went to another one is signed anew.
   * Written before the refunds were idempotent: a refund whose receipt was lost was sent again, failed
   * for the balance, and the payout never reached `returned`.
   */
  async function refund(p: Stored): Promise<void> {
    if (p.refunded || (p.refundTx && p.refundRaw === undefined)) return;
    if (!p.refundRaw) {
      const request = await wallet.prepareTransactionRequest({
        to: deps.chain.usdcAddress,
        data: encodeFunctionData({ abi: usdcAbi, functionName: "transfer", args: [p.refundAddress, BigInt(p.amountCents) * 10_000n] }),
      });
      p.refundRaw = await wallet.signTransaction(request);
      p.refundTx = keccak256(p.refundRaw);
      await save(p);
    }
    const hash = p.refundTx as Hex;
    /** The stored refund can never move money: dropped, so the next try signs a new one (it cannot pay twice). */
    const forget = async (why: string): Promise<never> => {
      p.refundRaw = null;
      p.refundTx = null;
      await save(p);
      throw new Error(`${why}; signing it again on the next try`);
    };
    // The sender's nonce is read before the receipt: a refund mined between the two reads is then seen
    // mined, where the other order took it for replaced and signed a second refund.
    const nonce = Number(parseTransaction(p.refundRaw).nonce);
    const taken = await deps.chain.nonceOf(account.address, "latest");
    let receipt = await deps.chain.receipt(hash);
    if (!receipt) {
      // The nonce was taken before the receipt was looked for, and not by this refund: it can never be mined.
      if (taken > nonce) return forget(`refund ${hash} was replaced at nonce ${nonce}`);
      await deps.chain.sendRaw(p.refundRaw).catch(() => undefined); // "already known": judged by the receipt
      receipt = await deps.chain.client.waitForTransactionReceipt({ hash, timeout: deps.refundWaitMs ?? REFUND_WAIT_MS });
    }
    // Mined and reverted: it moved nothing and its nonce is spent (every later try would read the same receipt).
    if (receipt.status !== "success") return forget(`refund ${hash} reverted`);
    p.refunded = true;
    await save(p);
  }

  async function deliver(p: Stored): Promise<void> {
    if (!webhookUrl || p.delivered === p.status) return;
    const body = JSON.stringify({ type: `payout.${p.status}`, data: { payout_id: p.payoutId } });
    const id = `msg_${randomBytes(12).toString("hex")}`;
    const at = new Date();
    const res = await fetch(webhookUrl, {
      method: "POST",
      headers: { "content-type": "application/json", "webhook-id": id, "webhook-timestamp": String(Math.floor(at.getTime() / 1000)), "webhook-signature": new Webhook(deps.webhookSecret).sign(id, at, body) },
      body,
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status >= 300) throw new Error(`webhook delivery answered ${res.status}`);
    p.delivered = p.status;
    await save(p);
  }

  return {
    name: "sandbox",
    depositAddress: account.address,
    estimatedArrival: "2-3 business days",
    setWebhookUrl(url) {
      webhookUrl = url;
    },
    /**
     * One payout per reference, however many tries ask at once or after a crash: the reference is claimed
     * for a payout id first, then that payout is stored if no try stored it yet. (Stored the other way
     * round, two tries that both read no reference, or a kill -9 between the writes, made two payouts for
     * one payment, and a failing one was refunded once for each.)
     */
    async createPayout(req) {
      const payoutId = await deps.ledger.kv.claim(refKey(req.reference), `po_${randomBytes(10).toString("hex")}`);
      const now = Date.now();
      const fresh: Stored = {
        payoutId,
        reference: req.reference,
        status: "processing",
        reason: null,
        amountCents: req.amountCents,
        outcome: sandboxOutcomeOf(req.recipient.account_number),
        accountNumber: `****${req.recipient.account_number.slice(-4)}`,
        refundAddress: req.refundAddress,
        dueAt: now + deps.delayMs,
        returnAt: null,
        refundTx: null,
        delivered: null,
      };
      return view(JSON.parse(await deps.ledger.kv.claim(key(payoutId), JSON.stringify(fresh))) as Stored);
    },
    async getPayout(id) {
      const p = await load(id);
      return p ? view(p) : undefined;
    },
    /**
     * Moves due payouts forward and (re)delivers undelivered outcomes. Bounded per call: each tick reads the
     * next payouts after the last one the previous tick read, and starts over at the end, so every payout is
     * reached however many there are (payouts are kept for good: the rail reads them after completion).
     */
    async tick() {
      const perTick = deps.payoutsPerTick ?? PAYOUTS_PER_TICK;
      const rows = await deps.ledger.kv.withPrefix("sandbox_payout:", perTick, cursor);
      cursor = rows.length === perTick ? rows.at(-1)!.key : undefined;
      const now = Date.now();
      for (const row of rows) {
        const p = JSON.parse(row.value) as Stored;
        try {
          if (p.status === "processing" && now >= p.dueAt) {
            if (p.outcome === "fail") {
              await refund(p);
              p.status = "failed";
              p.reason = "R03: No account / unable to locate account";
            } else if (p.outcome === "refuse") {
              await refund(p);
              p.status = "failed";
              p.refused = true;
              p.reason = `The sandbox off-ramp does not pay out to account ${SANDBOX_REFUSE_ACCOUNT}; the USDC was refunded.`;
            } else {
              p.status = "completed";
              if (p.outcome === "return") p.returnAt = now + deps.delayMs;
            }
            await save(p);
          } else if (p.status === "completed" && p.returnAt !== null && now >= p.returnAt) {
            // The outcome that was already delivered (completed) must reach the service before the return.
            if (p.delivered !== "completed") await deliver(p);
            await refund(p);
            p.status = "returned";
            p.reason = "R01: Insufficient funds";
            await save(p);
          }
          await deliver(p);
        } catch (err) {
          deps.logger.warn({ err: String(err).slice(0, 300), payout: p.payoutId }, "sandbox fiat provider step failed; retrying");
        }
      }
    },
  };
}
