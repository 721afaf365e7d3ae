/**
 * x402 rail: pays an HTTP API that answers 402, for `POST /v1/pay` (URL recipients) and the deprecated
 * `POST /v1/x402/pay`. The request path, in order, each step persisted before the next external call:
 *   idempotency (replay, 409, or claim) → request the target through the SSRF-safe fetcher →
 *   not 402: pass the reply through, nothing charged →
 *   402: read and judge every requirement (nothing is signed for a refused one) → sign from the project
 *   wallet (x402's client, caged) → hold price + fee and store the authorization in one commit → only
 *   then send the signature: retry once with the
 *   payment header → answer with the target's reply. A receipt whose transaction used our authorization
 *   on-chain is the settlement (the answer carries it); the dispatcher then sweeps the fee and completes
 *   the payment. Any other answer leaves it `processing` for the worker, which lets the chain decide
 *   (advanceX402Payment.ts).
 */
import { type PayResponse, type ProxiedResponse, type X402PayRequest, type X402PayResponse, limits } from "@agentwallet/api";
import type { PaymentRequired } from "@x402/core/types";
import { type Address, type Hex, getAddress } from "viem";
import type { AppContext } from "../../context.ts";
import { type Principal, requireActive } from "../../domain/principal.ts";
import { badRequest } from "../../domain/errors.ts";
import type { PaymentRow, ProjectRow } from "../../ledger/store.ts";
import { feeFor } from "../../money.ts";
import { findReplay, insufficient } from "../../services/payments/createPayment.ts";
import { type RecipientOf, holdControlsOf, judgeStatic, refusalError } from "../../domain/spending.ts";
import { renderPay, renderX402 } from "../../services/payments/render.ts";
import type { X402Rail } from "../rails.ts";
import { type LookupFunction, type SafeFetch, type SafeFetchMethod, type PreparedRequest, type SafeFetchResponse, createSafeFetcher } from "../safeFetch.ts";
import { SafeFetchError } from "../safeFetchErrors.ts";
import { type X402Deps, advanceX402Payment, fail, settledState } from "./advanceX402Payment.ts";
import { type ChosenRequirement, type RequirementPolicy, chooseRequirement } from "./chooseRequirement.ts";
import { type KeyClaim, claimIdempotencyKey, keptPassThrough } from "./claimIdempotencyKey.ts";
import { readPaymentRequired } from "./readPaymentRequired.ts";
import { readSettlementHeader, transactionUsedAuthorization } from "./settlementOnChain.ts";
import { type SignedPayment, signPayment } from "./signPayment.ts";
import { fetchFailed } from "./x402Errors.ts";
import { type X402State, x402State } from "./x402State.ts";

export type X402RailDeps = X402Deps & {
  /** DNS lookup of the fetcher; tests point names at internal addresses. Default `dns.lookup`. */
  lookup?: LookupFunction;
  /** Addresses of ours beyond the relayer, treasury, USDC contract and project wallets (the off-ramp). */
  otherOwnAddresses?: Address[];
};

/** USDC's EIP-712 domain, the same for Base USDC and the dev chain's TestUSDC. */
export const USDC_EIP712 = { name: "USD Coin", version: "2" } as const;

/** The API accepts bodies of this many UTF-16 code units; UTF-8 needs at most 3 bytes for each. */
export const PROXIED_BODY_BYTES_MAX = limits.proxiedBodyMaxChars * 3;

/** The request never signs with less of its lease left than this beyond its two fetches. */
const LEASE_MARGIN_MS = 5_000;

/** How old a block number may be to bound a settlement search, and when it is read again. */
const RECENT_BLOCK_MAX_AGE_MS = 60_000;
const RECENT_BLOCK_REFRESH_MS = 1_000;

/** x402 v1 names the networks that v2 calls by CAIP-2 id; only Base (and its testnet) are ours. */
const V1_NETWORK_NAMES: Readonly<Record<number, string>> = { 8453: "base", 84532: "base-sepolia" };

type ProxiedCall = {
  url: string;
  method: SafeFetchMethod;
  headers: Record<string, string> | undefined;
  body: string | undefined;
  maxAmountMicros: number;
  description: string | null;
  idempotencyKey: string | null;
  metadata: Record<string, string> | null;
};

type Outcome = { kind: "passthrough"; body: PayResponse; replayed: boolean } | { kind: "payment"; payment: PaymentRow; replayed: boolean };

/** A payment held for a chosen requirement: signed and recorded already (`signed`), or to be signed. */
type Held = {
  payment: PaymentRow;
  project: ProjectRow;
  chosen: ChosenRequirement;
  paymentRequired: PaymentRequired;
  fromBlock: Promise<number>;
  signed: SignedPayment | undefined;
  /** The paid retry, its connection dialled already. */
  retry: PreparedRequest;
};

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

  function policyFor(project: ProjectRow): RequirementPolicy {
    return {
      v2Network,
      v1Network,
      usdcAddress: chain.client.usdcAddress,
      eip712: USDC_EIP712,
      maxTimeoutSeconds: cfg.maxTimeoutSeconds,
      amountMicrosMax: limits.x402MaxAmountMicrosMax,
      ownAddresses: new Set([...serviceAddresses, ctx.custody.addressOf(project.wallet_index).toLowerCase()]),
      isProjectWallet: async (address) => (await ctx.ledger.db.selectFrom("projects").select("id").where("wallet_address", "=", getAddress(address)).executeTakeFirst()) !== undefined,
    };
  }

  const controlsOf = (principal: Principal, r: RecipientOf) => holdControlsOf(principal, r, { bankKey: ctx.recipientHashKey ?? new Uint8Array(0), approvalTimeoutMs: ctx.config.spending.approvalTimeoutMs });

  /** The unpaid request: it may reuse a kept-alive connection to the target (it carries no payment). */
  async function request(call: ProxiedCall): Promise<SafeFetchResponse> {
    return fetcher({ url: call.url, method: call.method, headers: call.headers, body: call.body }, { reuseConnection: true });
  }

  async function run(principal: Principal, call: ProxiedCall): Promise<Outcome> {
    let claim: KeyClaim | undefined;
    if (call.idempotencyKey !== null) {
      const replay = await findReplay(ctx, principal.projectId, call.idempotencyKey);
      if (replay) return { kind: "payment", payment: replay, replayed: true };
      // A paused project still reads back what its key holds; it claims nothing.
      if (principal.paused) {
        const kept = await keptPassThrough(ctx, principal.projectId, call.idempotencyKey);
        if (kept) return { kind: "passthrough", body: kept, replayed: true };
      }
    }
    requireActive(principal);
    await refuseBeforeConnecting(principal, call);
    if (call.idempotencyKey !== null) {
      const claimed = await claimIdempotencyKey(ctx, principal.projectId, call.idempotencyKey);
      if (claimed.kind === "passthrough") return { kind: "passthrough", body: claimed.body, replayed: true };
      claim = claimed.claim;
    }
    let held: Held;
    let retry: PreparedRequest | undefined;
    try {
      // A request that held between our first look and our claim owns the key now.
      const replay = call.idempotencyKey === null ? undefined : await findReplay(ctx, principal.projectId, call.idempotencyKey);
      if (replay) {
        await claim?.release();
        return { kind: "payment", payment: replay, replayed: true };
      }
      // Read while the target answers: needed only if it asks to be paid.
      const projectRead = ctx.ledger.getProject(principal.projectId);
      projectRead.catch(() => undefined);
      const first = await request(call).catch((err: unknown) => {
        throw err instanceof SafeFetchError ? fetchFailed(err, "request") : err;
      });
      if (first.status !== 402) {
        const body = passThrough(ctx, call, first);
        await claim?.rememberPassThrough(body);
        return { kind: "passthrough", body, replayed: false };
      }
      const project = await projectRead;
      if (!project) throw new Error(`project ${principal.projectId} missing`);
      const paymentRequired = readPaymentRequired(first);
      const chosen = await chooseRequirement(paymentRequired, policyFor(project), call.maxAmountMicros);
      const fromBlock = blockBeforeSigning();
      fromBlock.catch(() => undefined);
      const base: X402State = { stage: "held", x402Version: chosen.x402Version, network: chosen.network, payTo: chosen.payTo, maxTimeoutSeconds: chosen.maxTimeoutSeconds };
      let signed: SignedPayment | undefined;
      let payment: { row: PaymentRow; replayed: boolean };
      if (coveredBySnapshot(principal, chosen)) {
        // The paid retry's connection is dialled (fresh, pinned, checked) while the payment is signed and held.
        retry = fetcher.prepare(call.url);
        // Sign first, then one commit holds the money and records the authorization (stage `signed`):
        // the signature leaves this process only after that commit. Should the hold be refused after
        // all (a concurrent spend, a racing key), the signature is dropped unsent.
        signed = await sign(project, paymentRequired, chosen);
        payment = await hold(principal, call, chosen, { ...base, stage: "signed", authorization: signed.authorization, fromBlock: await fromBlock });
      } else {
        // Most likely refused for the balance; if a deposit landed meanwhile, sign after the hold.
        payment = await hold(principal, call, chosen, base);
      }
      if (payment.replayed) {
        retry?.close();
        return { kind: "payment", payment: payment.row, replayed: true };
      }
      retry ??= fetcher.prepare(call.url);
      held = { payment: payment.row, project, chosen, paymentRequired, fromBlock, signed, retry };
    } catch (err) {
      retry?.close();
      await claim?.release();
      throw err;
    }
    // From here the payment row owns the idempotency key.
    await claim?.release();
    return { kind: "payment", payment: await payHeld(call, held), replayed: false };
  }

  /**
   * One EIP-712 signature (~0.4 ms) that this request waits for: made on this thread, where the hop
   * to the signing thread and back would cost more than the work.
   */
  function sign(project: ProjectRow, paymentRequired: PaymentRequired, chosen: ChosenRequirement): Promise<SignedPayment> {
    return signPayment(ctx.custody.signerFor(project.wallet_index, { onCallerThread: true }) as never, paymentRequired, chosen, { usdcAddress: chain.client.usdcAddress, v2Network, v1Network, nowMs: ctx.clock().getTime() });
  }

  /**
   * A block number read before the signature exists: the settlement search starts there. Any earlier
   * block is as correct, only wider to search, so a number read in the last minute is used at once
   * (and read again in the background after a second) instead of a round trip on every payment.
   */
  function blockBeforeSigning(): Promise<number> {
    return chain.client.recentBlockNumber(RECENT_BLOCK_MAX_AGE_MS, RECENT_BLOCK_REFRESH_MS);
  }

  /**
   * Whether the balance read at authentication covers price and fee: then signing may come first.
   * Never for a token with spending controls: its price is judged by the hold before anything is signed.
   */
  function coveredBySnapshot(principal: Principal, chosen: ChosenRequirement): boolean {
    if (controlsOf(principal, { rail: "x402", url: "https://unused.invalid/" })) return false;
    return principal.balance.availableMicros >= chosen.amountMicros + feeFor(chosen.amountMicros, principal.plan);
  }

  /**
   * A rail or a host the controls refuse is refused before any connection: the rules that do not
   * depend on the price are judged here as the hold would judge them (it judges them again).
   */
  async function refuseBeforeConnecting(principal: Principal, call: ProxiedCall): Promise<void> {
    const controls = controlsOf(principal, { rail: "x402", url: call.url });
    if (!controls) return;
    const judged = judgeStatic(controls, principal.projectId, "x402", 0, ctx.clock());
    if (judged.kind !== "refused") return;
    await ctx.ledger.recordRefusal({ projectId: principal.projectId, tokenId: principal.tokenId, rail: "x402", recipient: call.url, amountMicros: null, refusal: judged.refusal });
    throw refusalError(judged.refusal);
  }

  async function hold(principal: Principal, call: ProxiedCall, chosen: ChosenRequirement, state: X402State): Promise<{ row: PaymentRow; replayed: boolean }> {
    const feeMicros = feeFor(chosen.amountMicros, principal.plan);
    const leaseUntil = new Date(ctx.clock().getTime() + ctx.config.workers.paymentRequestLeaseMs).toISOString();
    const held = await ctx.ledger.hold({
      status: state.stage === "signed" ? "processing" : "pending",
      projectId: principal.projectId,
      rail: "x402",
      railTxnType: "x402_payment",
      amountUnits: chosen.amountMicros,
      feeUnits: feeMicros,
      amountMicros: chosen.amountMicros,
      feeMicros,
      currency: "usdc",
      recipient: call.url,
      recipientJson: null,
      merchantName: new URL(call.url).host,
      description: call.description,
      idempotencyKey: call.idempotencyKey,
      metadata: call.metadata,
      railState: state,
      estimatedArrival: null,
      inFlightUntil: leaseUntil,
      leaseOwner: ctx.instanceId,
      controls: controlsOf(principal, { rail: "x402", url: call.url }),
    });
    if (held.kind === "insufficient") throw insufficient(held.availableMicros, chosen.amountMicros, feeMicros);
    if (held.kind === "refused") throw refusalError(held.refusal);
    if (held.kind === "duplicate") return { row: (await findReplay(ctx, principal.projectId, call.idempotencyKey!)) ?? held.payment, replayed: true };
    return { row: held.payment, replayed: false };
  }

  /** Sign, retry once with the payment header, and settle what the answer lets us settle. */
  async function payHeld(call: ProxiedCall, h: Held): Promise<PaymentRow> {
    let payment = h.payment;
    const leaseLeftMs = () => Date.parse(payment.lease_until ?? "") - ctx.clock().getTime();
    let signed: SignedPayment;
    let state: X402State;
    try {
      if (!(leaseLeftMs() > 2 * cfg.timeoutMs + LEASE_MARGIN_MS)) throw new Error("the request's lease is too short to send a signature safely");
      if (h.signed) {
        signed = h.signed;
        state = x402State(payment);
      } else {
        signed = await sign(h.project, h.paymentRequired, h.chosen);
        state = { ...x402State(payment), stage: "signed", authorization: signed.authorization, fromBlock: await h.fromBlock };
        payment = await ctx.ledger.updatePayment(payment.id, { status: "processing", rail_state: JSON.stringify(state) });
      }
    } catch (err) {
      // Nothing left the process: the payment fails and the hold is credited back at once.
      h.retry.close();
      await fail(d, payment, "x402_not_sent", "The payment could not be signed or sent safely; nothing was sent, the amount and fee were credited back.");
      throw err;
    }

    let reply: SafeFetchResponse | undefined;
    try {
      reply = await h.retry.send({ url: call.url, method: call.method, headers: call.headers, body: call.body }, { serviceHeaders: { [signed.header.name]: signed.header.value } });
    } catch (err) {
      if (err instanceof SafeFetchError && !err.requestMayHaveBeenSent) {
        await fail(d, payment, "x402_not_sent", `The signed payment never reached the target (${err.code}); the amount and fee were credited back.`);
        throw fetchFailed(err, "paid_retry");
      }
      // The target may have the signature: the worker decides on-chain.
      ctx.logger.warn({ payment_id: payment.id, code: (err as SafeFetchError).code }, "x402 paid retry failed after sending; settlement is unknown");
    }

    // Only a receipt whose transaction used our authorization settles the payment here; a 402, an error,
    // or a receipt we cannot prove leaves it `processing` until the chain decides (advanceX402Payment.ts).
    let settlement: Hex | undefined;
    try {
      const reported = reply ? readSettlementHeader(reply.headers) : undefined;
      if (reported?.success && reported.transaction && (await transactionUsedAuthorization(chain, reported.transaction, signed.authorization))) {
        settlement = reported.transaction as Hex;
      }
    } catch (err) {
      ctx.logger.warn({ err, payment_id: payment.id }, "x402 settlement proof failed; the worker will check the chain");
    }
    // One write: the reply, the settlement, and the end of the request's hold on the key. A proven
    // settlement stays leased to this process for the dispatcher, which sweeps the fee right after
    // the answer; anything else goes to the worker.
    const dispatch = settlement !== undefined ? ctx.dispatch : undefined;
    try {
      payment = await ctx.ledger.updatePayment(payment.id, {
        ...(reply ? { response_json: JSON.stringify(proxied(reply)) } : {}),
        ...(settlement ? { tx_hash: settlement, rail_state: JSON.stringify(settledState(state, settlement, "receipt")) } : {}),
        in_flight_until: null,
        ...(dispatch ? {} : { lease_owner: null, lease_until: null, next_attempt_at: ctx.clock().toISOString() }),
      });
    } catch (err) {
      // The lease expires and a worker resumes from the signed stage: the chain still decides.
      ctx.logger.error({ err, payment_id: payment.id }, "x402 payment could not be stored after the paid retry; a worker will resume it");
      return (await ctx.ledger.getPayment(payment.id)) ?? payment;
    }
    dispatch?.(payment);
    return payment;
  }

  return {
    advance: (payment) => advanceX402Payment(d, payment),

    async pay(principal, body) {
      if (body.amount_usd !== undefined) {
        throw badRequest("invalid_request", "amount_usd is not used for URL recipients: the target sets the price. Cap it with max_amount_usdc (micro-USDC).");
      }
      const out = await run(principal, callOf(body.recipient, body, { description: body.description ?? null, idempotencyKey: body.idempotency_key ?? null, metadata: body.metadata ?? null }));
      return { httpStatus: 200, body: out.kind === "passthrough" ? out.body : renderPay(out.payment), replayed: out.replayed };
    },

    async payLegacy(principal, body, idempotencyKey = null) {
      // The deprecated endpoint has no description; its idempotency key can only come as a header.
      const out = await run(principal, callOf(body.url, body, { description: null, idempotencyKey, metadata: body.metadata ?? null }));
      if (out.kind === "payment") return { httpStatus: 200, body: renderX402(out.payment), replayed: out.replayed };
      const r = out.body.response!;
      return { httpStatus: 200, body: { ...r, payment_amount: 0, fee_amount: 0, tx_hash: null, settled: false } satisfies X402PayResponse, replayed: out.replayed };
    },
  };
}

function callOf(url: string, b: Pick<X402PayRequest, "method" | "headers" | "body"> & { max_amount_usdc?: number }, meta: { description: string | null; idempotencyKey: string | null; metadata: Record<string, string> | null }): ProxiedCall {
  return { url, method: b.method ?? "GET", headers: b.headers, body: b.body, maxAmountMicros: b.max_amount_usdc ?? limits.x402MaxAmountMicrosMax, ...meta };
}

/** Hop-by-hop headers describe our connection to the target, not its reply (RFC 9110 §7.6.1). */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-authenticate", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade"]);

/** The target's reply as the API returns it: status, end-to-end headers (lowercased), body. */
function proxied(reply: SafeFetchResponse): ProxiedResponse {
  const listed = new Set((reply.headers.connection ?? "").split(",").map((t) => t.trim().toLowerCase()));
  const headers = Object.fromEntries(Object.entries(reply.headers).filter(([name]) => !HOP_BY_HOP.has(name) && !listed.has(name)));
  return { status_code: reply.status, headers, body: reply.body };
}

/**
 * A target that did not answer 402 was not paid: its reply comes back completed, for 0, under an id of
 * its own (`req_…`, not a transaction id: nothing is recorded in the ledger).
 */
function passThrough(ctx: AppContext, call: ProxiedCall, reply: SafeFetchResponse): PayResponse {
  return {
    id: ctx.newId("txn").replace(/^txn_/, "req_"),
    status: "completed",
    rail: "x402",
    amount_charged: 0,
    fee: 0,
    currency: "usdc",
    recipient: call.url,
    tx_hash: null,
    created_at: ctx.clock().toISOString(),
    estimated_arrival: null,
    response: proxied(reply),
  };
}
