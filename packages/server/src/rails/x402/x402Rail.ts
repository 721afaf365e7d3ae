/**
 * x402 rail: the adapter the payment core (services/payments/payByRequest.ts) drives to pay an HTTP API
 * that answers 402. It talks to the target and signs; it keeps nothing and decides nothing about the
 * payment's record: the core claims the key, holds, records each stage before the next external call
 * and resolves. Its steps, in the order the core calls them:
 *   `request` the target unpaid through the SSRF-safe fetcher → `judge` its 402 (every requirement
 *   read and checked; nothing is signed for a refused one) → `prepareRetry` (dial the paid retry's
 *   fresh connection) → `sign` from the project wallet (x402's client, caged) → `sendPaid`: the retry
 *   with the payment header, and the settlement when the target's receipt names a transaction that
 *   used our authorization on-chain.
 * After the request, `advance` lets the chain decide and sweeps the fee (advanceX402Payment.ts).
 * A 402 that offers no x402 requirement but an MPP challenge (`WWW-Authenticate: Payment`, mppChallenge.ts)
 * is paid by MPP instead: the same EIP-3009 authorization, sent as MPP's credential. A target that offers
 * both is paid by x402 alone; a refusal of its x402 requirement is never followed by MPP.
 */
import { createHash, randomBytes } from "node:crypto";
import { type ProxiedResponse, limits } from "@agentwallet/api";
import { type Address, type Hex, getAddress } from "viem";
import { type X402Rail, type X402Call, type X402Quote, type X402Signature, type X402PaidOutcome, type ProvenSettlement, advanceByStage } from "../rails.ts";
import { HOP_BY_HOP, type LookupFunction, type PreparedRequest, type SafeFetch, type SafeFetchResponse, createSafeFetcher } from "../../net/safeFetch.ts";
import { SafeFetchError } from "../../net/safeFetchErrors.ts";
import { redactServiceTokens } from "../../tokenScan.ts";
import { USDC_EIP712 } from "../eip3009.ts";
import { type PayloadResent, type X402Deps, advanceX402Payment, settledState } from "./advanceX402Payment.ts";
import type { Payment } from "../../domain/payment.ts";
import { type ChosenRequirement, type RequirementPolicy, chooseRequirement } from "./chooseRequirement.ts";
import { readPaymentRequired } from "./readPaymentRequired.ts";
import { type ChosenChallenge, challengeText, chooseMppChallenge, mppCredential, offersMpp, readMppChallenges, readMppReceipt } from "./mppChallenge.ts";
import { signAuthorization } from "../eip3009.ts";
import { badRequest } from "../../domain/errors.ts";
import { readSettlementHeader, settlementLog } from "./settlementOnChain.ts";
import { signPayment } from "./signPayment.ts";
import { fetchFailed } from "./x402Errors.ts";
import { readOffer } from "./readOffer.ts";
import { type X402HeldState, type X402SettledState, type X402SignedState, x402States } from "./x402State.ts";
import type { PaymentRequired } from "@x402/core/types";

export type X402RailDeps = X402Deps & {
  /** DNS lookup of the fetcher; tests point names at internal addresses. Default `dns.lookup`. */
  lookup?: LookupFunction;
  /** Addresses of ours beyond the relayer, treasury, USDC contract and project wallets (the off-ramp). */
  otherOwnAddresses?: Address[];
};

/** The API accepts bodies of this many UTF-16 code units; UTF-8 needs at most 3 bytes for each. */
const PROXIED_BODY_BYTES_MAX = limits.proxiedBodyMaxChars * 3;

/** The request never signs with less of its lease left than this beyond its two fetches. */
const LEASE_MARGIN_MS = 5_000;

/** How old a block number may be to bound a settlement search, and when it is read again. */
const RECENT_BLOCK_MAX_AGE_MS = 60_000;
const RECENT_BLOCK_REFRESH_MS = 1_000;

/** Times the identical payload is sent again after an unknown outcome, to a merchant with payment-identifier. */
const PAYLOAD_RESENDS_MAX = 2;

/**
 * The payment-identifier of a payment: derived from the project and the request's idempotency key, so every
 * retry of one request names one payment; a request without a key gets a random one (stored with the payload).
 */
function paymentIdentifierFor(identity: { projectId: string; idempotencyKey: string | null }): string {
  const seed = identity.idempotencyKey === null ? randomBytes(16).toString("hex") : `${identity.projectId}\n${identity.idempotencyKey}`;
  return `pay_${createHash("sha256").update(seed).digest("hex").slice(0, 40)}`;
}

/** x402 v1 names the networks that v2 calls by CAIP-2 id; only Base (and its testnet) are ours. */
const V1_NETWORK_NAMES: Readonly<Record<number, string>> = { 8453: "base", 84532: "base-sepolia" };

/** What `judge` chose, with what `sign` needs of it (opaque to the core). */
type Judged = X402Quote & { method: X402Call["method"] } & ({ chosen: ChosenRequirement; paymentRequired: PaymentRequired; mpp?: undefined } | { mpp: ChosenChallenge });

/** What `request` learnt of the call that `judge` needs: whether the caller sent its own Authorization, and its method. */
type Reply = { first: SafeFetchResponse; callerAuthorization: boolean; method: X402Call["method"] };

export function createX402Rail(d: X402RailDeps): X402Rail {
  const { ctx, chain } = d;
  const cfg = ctx.config.x402;
  const fetcher: SafeFetch = createSafeFetcher({
    allowHttp: cfg.allowHttp,
    allowPrivateNetworks: cfg.allowPrivateNetworks,
    // The same array: the sandbox adds its demo's targets once they listen (server.ts).
    allowedTargets: cfg.allowedTargets,
    timeoutMs: cfg.timeoutMs,
    maxResponseBytes: cfg.maxResponseBytes,
    // Aligned with the API's own bounds, so whatever the schema accepts the fetcher sends.
    maxRequestBodyBytes: PROXIED_BODY_BYTES_MAX,
    maxHeaderCount: limits.proxiedHeadersMaxCount,
    lookup: d.lookup,
  });
  const v2Network = `eip155:${chain.client.settings.chainId}`;
  const v1Network = V1_NETWORK_NAMES[chain.client.settings.chainId] ?? v2Network;
  const serviceAddresses = [chain.relayerAddress, chain.treasuryAddress, chain.client.usdcAddress, ...(d.otherOwnAddresses ?? [])].map((a) => a.toLowerCase());

  function policyFor(walletIndex: number): RequirementPolicy {
    return {
      v2Network,
      v1Network,
      usdcAddress: chain.client.usdcAddress,
      eip712: USDC_EIP712,
      maxTimeoutSeconds: cfg.maxTimeoutSeconds,
      amountMicrosMax: limits.x402MaxAmountMicrosMax,
      ownAddresses: new Set([...serviceAddresses, ctx.custody.addressOf(walletIndex).toLowerCase()]),
      isProjectWallet: (address) => ctx.ledger.projects.isWallet(getAddress(address)),
    };
  }

  const wire = (call: X402Call) => ({ url: call.url, method: call.method, headers: call.headers, body: call.body });

  /**
   * The paid retry's payload sent again, byte for byte, over a fresh connection, at most PAYLOAD_RESENDS_MAX
   * times while the outcome stays unknown; undefined if no answer came.
   */
  async function resendIdentical(call: X402Call, headers: Record<string, string>, paymentId: string): Promise<SafeFetchResponse | undefined> {
    for (let attempt = 1; attempt <= PAYLOAD_RESENDS_MAX; attempt++) {
      try {
        return await fetcher.prepare(call.url).send(wire(call), { serviceHeaders: headers });
      } catch (err) {
        ctx.logger.warn({ payment_id: paymentId, attempt, code: (err as SafeFetchError).code }, "x402 payload sent again; its outcome is still unknown");
      }
    }
    return undefined;
  }

  return {
    advance: advanceByStage(x402States, (payment, state) => advanceX402Payment({ ...d, resendStored }, payment, state)),

    leaseNeededMs: 2 * cfg.timeoutMs + LEASE_MARGIN_MS,

    async request(call) {
      // The unpaid request may reuse a kept-alive connection to the target: it carries no payment.
      const first = await fetcher(wire(call), { reuseConnection: true }).catch((err: unknown) => {
        throw err instanceof SafeFetchError ? fetchFailed(err, "request") : err;
      });
      const callerAuthorization = Object.keys(call.headers ?? {}).some((name) => name.toLowerCase() === "authorization");
      return { paymentRequired: first.status === 402, raw: { first, callerAuthorization, method: call.method } satisfies Reply, proxied: () => proxied(first) };
    },

    async judge(reply, walletIndex, maxAmountMicros) {
      const { first, callerAuthorization, method } = reply.raw as Reply;
      // A block number read before the signature exists: the settlement search starts there. Any
      // earlier block is as correct, only wider to search, so a number read in the last minute is used
      // at once (and read again in the background after a second) instead of a round trip each time.
      const recentBlock = () => {
        const fromBlock = chain.client.recentBlockNumber(RECENT_BLOCK_MAX_AGE_MS, RECENT_BLOCK_REFRESH_MS);
        fromBlock.catch(() => undefined);
        return fromBlock;
      };
      let paymentRequired: PaymentRequired;
      try {
        paymentRequired = readPaymentRequired(first);
      } catch (err) {
        // No x402 requirement at all (no PAYMENT-REQUIRED header): an MPP challenge is paid instead.
        if (first.headers["payment-required"] !== undefined || !offersMpp(first.headers)) throw err;
        const chosen = await chooseMppChallenge(readMppChallenges(first.headers), { ...policyFor(walletIndex), chainId: chain.client.settings.chainId }, maxAmountMicros, ctx.clock().getTime());
        if (callerAuthorization) {
          throw badRequest("invalid_request", "The target asks to be paid by MPP, whose credential travels in the Authorization header; the request sets its own Authorization header, which would be replaced. Remove it to pay this target. Nothing was signed or charged.");
        }
        const state: X402HeldState = {
          stage: "held",
          protocol: "mpp",
          mpp: { challengeId: chosen.challenge.id, realm: chosen.challenge.realm, challenge: challengeText(chosen.challenge) },
          network: v2Network,
          payTo: chosen.payTo,
          maxTimeoutSeconds: Math.max(1, chosen.validBefore - Math.floor(ctx.clock().getTime() / 1000)),
        };
        const terms = { protocol: "mpp" as const, scheme: `${chosen.challenge.method}/${chosen.challenge.intent}`, network: v2Network, asset: chain.client.usdcAddress, payTo: chosen.payTo, amountMicros: chosen.amountMicros, maxTimeoutSeconds: state.maxTimeoutSeconds, offer: async () => null };
        return { amountMicros: chosen.amountMicros, state, fromBlock: recentBlock(), mpp: chosen, terms, method } satisfies Judged;
      }
      const chosen = await chooseRequirement(paymentRequired, policyFor(walletIndex), maxAmountMicros);
      const state: X402HeldState = { stage: "held", x402Version: chosen.x402Version, network: chosen.network, payTo: chosen.payTo, maxTimeoutSeconds: chosen.maxTimeoutSeconds, paymentRequired };
      // Reported in CAIP-2 whatever the version (v1 says "base"), as offers and quotes name networks.
      const termsOf = { scheme: "exact", network: v2Network, asset: getAddress(String(chosen.raw.asset)), payTo: chosen.payTo, amountMicros: chosen.amountMicros };
      const terms = { protocol: "x402" as const, ...termsOf, maxTimeoutSeconds: chosen.maxTimeoutSeconds, offer: () => readOffer(paymentRequired, termsOf, Math.floor(ctx.clock().getTime() / 1000)) };
      return { amountMicros: chosen.amountMicros, state, fromBlock: recentBlock(), chosen, paymentRequired, terms, method } satisfies Judged;
    },

    prepareRetry: (url) => fetcher.prepare(url),

    /**
     * One EIP-712 signature (~0.4 ms) that the request waits for: made on this thread, where the hop
     * to the signing thread and back would cost more than the work.
     */
    async sign(walletIndex, quote, identity) {
      const q = quote as Judged;
      if (q.mpp) {
        const { mpp } = q;
        const auth = await signAuthorization(ctx.custody, walletIndex, { chainId: chain.client.settings.chainId, usdc: chain.client.usdcAddress, to: mpp.payTo, valueMicros: mpp.amountMicros, validAfter: 0, validBefore: mpp.validBefore, nonce: mpp.nonce }, { onCallerThread: true });
        const { signature: _signature, ...authorization } = auth;
        const header = { name: "authorization", value: mppCredential(mpp, auth, chain.client.settings.chainId) };
        const state: X402SignedState = { ...q.state, stage: "signed", authorization, fromBlock: await q.fromBlock, sent: header };
        return { header, state } satisfies X402Signature;
      }
      const signed = await signPayment(ctx.custody.signerFor(walletIndex, { onCallerThread: true }) as never, q.paymentRequired, q.chosen, {
        usdcAddress: chain.client.usdcAddress,
        v2Network,
        v1Network,
        nowMs: ctx.clock().getTime(),
        paymentIdentifier: paymentIdentifierFor(identity),
      });
      const state: X402SignedState = {
        ...q.state,
        stage: "signed",
        authorization: signed.authorization,
        fromBlock: await q.fromBlock,
        sent: signed.header,
        ...(signed.paymentIdentifier ? { paymentIdentifier: signed.paymentIdentifier, method: q.method } : {}),
      };
      return { header: signed.header, state } satisfies X402Signature;
    },

    async sendPaid(retry, call, signature, paymentId): Promise<X402PaidOutcome> {
      const { state } = signature;
      let reply: SafeFetchResponse | undefined;
      // The header exactly as stored with the payment (stage `signed`): sent again as it is, never re-signed.
      const headers = { [signature.header.name]: signature.header.value };
      try {
        reply = await (retry as PreparedRequest).send(wire(call), { serviceHeaders: headers });
      } catch (err) {
        if (err instanceof SafeFetchError && !err.requestMayHaveBeenSent) {
          return { kind: "not_sent", error: fetchFailed(err, "paid_retry"), reason: `The signed payment never reached the target (${err.code}); the amount and fee were credited back.` };
        }
        // The target may have the signature: the chain decides (advanceX402Payment.ts).
        ctx.logger.warn({ payment_id: paymentId, code: (err as SafeFetchError).code }, "x402 paid retry failed after sending; settlement is unknown");
        // A merchant that declared x402's payment-identifier recognises the same payload by its identifier and
        // answers what it answered the first time ("recovering a lost response"): the identical bytes go again.
        if (state.paymentIdentifier) reply = await resendIdentical(call, headers, paymentId);
      }
      // Fixed for the proof, which is made later (when the core asks: after its answer).
      const answered = reply;
      return { kind: "sent", reply: answered ? proxied(answered) : undefined, prove: async () => (answered ? await provenSettlement(answered, state, paymentId) : undefined) };
    },
  };

  /**
   * The settlement an answer proves: only a receipt whose transaction used our authorization settles the
   * payment here; a 402, an error, or a receipt we cannot prove leaves it to the chain.
   */
  async function provenSettlement(reply: SafeFetchResponse, state: X402SignedState, paymentId: string): Promise<ProvenSettlement> {
    try {
      const reported = state.protocol === "mpp" ? mppReported(reply.headers) : readSettlementHeader(reply.headers);
      const proven = reported?.success && reported.transaction ? await settlementLog(chain, reported.transaction, state.authorization) : undefined;
      if (!proven) return undefined;
      const response = reply.headers["payment-response"] ?? reply.headers["x-payment-response"];
      const receipt = state.protocol === "mpp" ? reply.headers["payment-receipt"] : undefined;
      const seen = { ...(response ? { response } : {}), ...(receipt ? { receipt } : {}), ...(proven.log ? { log: proven.log } : {}) };
      return { txHash: reported!.transaction as Hex, state: settledState(state, reported!.transaction as Hex, "receipt", seen) };
    } catch (err) {
      ctx.logger.warn({ err, payment_id: paymentId }, "x402 settlement proof failed; the worker will check the chain");
      return undefined;
    }
  }

  /**
   * The worker's send of the stored payload (advanceX402Payment.ts): the exact header, with the paid request's
   * method, to the payment's URL, over a fresh connection. The caller's own headers and body are not stored
   * (they may hold secrets), so they are not sent: a merchant that declared payment-identifier answers the
   * payload by its identifier. Undefined when no answer came.
   */
  async function resendStored(payment: Payment, state: X402SignedState): Promise<PayloadResent | undefined> {
    const call = { url: payment.recipient, method: state.method ?? "GET", headers: undefined, body: undefined };
    let reply: SafeFetchResponse;
    try {
      reply = await fetcher.prepare(call.url).send(call, { serviceHeaders: { [state.sent!.name]: state.sent!.value } });
    } catch (err) {
      ctx.logger.warn({ payment_id: payment.id, code: (err as SafeFetchError).code }, "x402 payload sent again by the worker; no answer came");
      return undefined;
    }
    return { status: reply.status, reply: proxied(reply), settlement: await provenSettlement(reply, state, payment.id) };
  }
}

/** An MPP receipt as x402's settlement report: its reference is the settlement's transaction. */
function mppReported(headers: Readonly<Record<string, string>>) {
  const receipt = readMppReceipt(headers);
  return receipt ? { success: receipt.status === "success", transaction: receipt.reference } : undefined;
}

/**
 * The target's reply as the API returns and stores it: status, end-to-end headers (lowercased; hop-by-hop ones
 * describe our connection), body. A token of ours in it (a target echoing one it was given elsewhere) is cut
 * out first; where one is encoded so that it cannot be cut out alone, the whole value is replaced.
 */
function proxied(reply: SafeFetchResponse): ProxiedResponse {
  const listed = new Set((reply.headers.connection ?? "").split(",").map((t) => t.trim().toLowerCase()));
  const headers = Object.fromEntries(Object.entries(reply.headers).filter(([name]) => !HOP_BY_HOP.has(name) && !listed.has(name)).map(([name, value]) => [name, redactServiceTokens(value) ?? REDACTED]));
  return { status_code: reply.status, headers, body: redactServiceTokens(reply.body) ?? REDACTED };
}

const REDACTED = "[redacted: the target's reply carried an Agent Wallet API token]";
