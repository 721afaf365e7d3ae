/**
 * The payment core's path for a rail whose price is known only after a request to the recipient
 * (x402). Same idempotency, same hold, same resolution as every payment (createPayment.ts); what
 * differs is the order, each step persisted before the next external call:
 *   (createPayment: replay, paused project) → claim the key (idempotency.ts) → the rules that do not depend on the price (a rail or a
 *   host the controls refuse: refused before any connection) → the rail asks the target →
 *   no 402: its free reply is kept under the key, nothing charged →
 *   402: the rail judges it (nothing is signed for a refused requirement) → the one hold, with the
 *   authorization already signed when the balance read at authentication covers it (never for a
 *   token with spending controls: the hold judges the price before anything is signed) → the rail
 *   sends the paid retry → the answer, with the reply; after it the proof of the settlement the reply reports
 *   (on-chain) and one write of both; the dispatcher then sweeps the fee and completes. Any other outcome leaves the payment `processing`: the worker lets the chain
 *   decide (the rail's `advance`).
 */
import { randomUUID } from "node:crypto";
import type { PaymentContext } from "./paymentContext.ts";
import type { Principal } from "../../domain/principal.ts";
import { judgeStatic, refusalError } from "../../domain/spending.ts";
import { unavailable } from "../../domain/errors.ts";
import type { FailureCode } from "../../ledger/failureCodes.ts";
import type { Payment, PaymentPatch } from "../../domain/payment.ts";
import type { PaidRetry, ProvenSettlement, X402Call, X402Quote, X402Rail, X402Signature } from "../../rails/rails.ts";
import { x402States } from "../../rails/x402/x402State.ts";
import { feeFor } from "../../money.ts";
import { holdControls } from "../spendingControls.ts";
import { type Created, type CreatedPayment, holdPayment, railUnavailable } from "./hold.ts";
import { type KeyClaim, claimKey, findReplay } from "./idempotency.ts";
import { renderFreeReply } from "./render.ts";
import { judgeAgainstQuote, quoteOf } from "./quoteCheck.ts";
import type { QuoteContext } from "./quotePrice.ts";

/**
 * An x402 payment request: the call to make, and what every payment may carry (and a quote it must match: quoteCheck.ts).
 * `proofInAnswer`: the answer waits for the settlement's proof, so it carries the proven `tx_hash` (the legacy endpoint,
 * whose `settled` says so); otherwise the proof follows the answer with the payment's record.
 */
export type X402Request = X402Call & { rail: "x402"; description: string | null; idempotencyKey: string | null; metadata: Record<string, string> | null; quoteId: string | null; proofInAnswer?: boolean };

/** A payment held for a judged requirement: signed and recorded already (`signature`), or to be signed. */
type Held = { payment: Payment; walletIndex: number; quote: X402Quote; signature: X402Signature | undefined; retry: PaidRetry };

/** After createPayment answered a replay and refused a paused project. */
export async function payByRequest(ctx: QuoteContext, principal: Principal, req: X402Request): Promise<Created> {
  const key = req.idempotencyKey;
  const rail = ctx.rails?.x402;
  if (!rail) throw railUnavailable("x402");
  await refuseBeforeConnecting(ctx, principal, req);
  // A quote that is unknown, expired or for another request is refused before the target is contacted.
  const quoted = await quoteOf(ctx, principal, req);
  let claim: KeyClaim | undefined;
  if (key !== null) {
    const claimed = await claimKey(ctx, principal.projectId, key);
    if (claimed.kind === "reply") return { kind: "reply", body: claimed.body, replayed: true };
    claim = claimed.claim;
  }
  let held: Held;
  let retry: PaidRetry | undefined;
  try {
    // A request that held between our first look and our claim owns the key now.
    const replay = await findReplay(ctx, principal.projectId, key);
    if (replay) {
      await claim?.release();
      return { kind: "payment", payment: replay, replayed: true };
    }
    const first = await rail.request(req);
    if (!first.paymentRequired) {
      const body = renderFreeReply({ id: ctx.newId("txn").replace(/^txn_/, "req_"), createdAt: ctx.clock().toISOString(), recipient: req.url, response: first.proxied() });
      await claim?.keepReply(body);
      return { kind: "reply", body, replayed: false };
    }
    const walletIndex = principal.walletIndex;
    const quote = quoted ? await judgeAgainstQuote(rail, first, walletIndex, req, quoted) : await rail.judge(first, walletIndex, req.maxAmountMicros);
    let signature: X402Signature | undefined;
    let payment: CreatedPayment;
    if (coveredBySnapshot(ctx, principal, req, quote)) {
      // The paid retry's connection is dialled (fresh, pinned, checked) while the payment is signed and held.
      retry = rail.prepareRetry(req.url);
      // Sign first, then one commit holds the money and records the authorization (stage `signed`):
      // the signature leaves this process only after that commit. Should the hold be refused after
      // all (a concurrent spend, a racing key), the signature is dropped unsent.
      signature = await rail.sign(walletIndex, quote, { projectId: principal.projectId, idempotencyKey: key });
      payment = await hold(ctx, principal, req, rail, quote, signature.state, "processing");
    } else {
      // Most likely refused for the balance; if a deposit landed meanwhile, sign after the hold.
      payment = await hold(ctx, principal, req, rail, quote, quote.state, "pending");
    }
    if (payment.replayed) {
      retry?.close();
      return { kind: "payment", ...payment };
    }
    retry ??= rail.prepareRetry(req.url);
    held = { payment: payment.payment, walletIndex, quote, signature, retry };
  } catch (err) {
    retry?.close();
    await letGo(ctx, claim);
    throw err;
  }
  // From here the payment row owns the idempotency key (a repeat finds the row before any claim), so the claim is
  // given up while the paid request runs, not before it: its write is not on the payment's path.
  const released = letGo(ctx, claim);
  try {
    return { kind: "payment", payment: await payHeld(ctx, rail, req, held), replayed: false };
  } finally {
    await released;
  }
}

/** Waits before each further attempt to give a claim up, after the first failed: about 5 s in all. */
const CLAIM_RELEASE_RETRIES_MS = [250, 1_000, 4_000];

/**
 * Gives the key's claim up. A database at capacity may refuse that too (the request failed for the same cause):
 * the release is then tried again after the answer, so a repeat of the key a moment later is a new attempt
 * instead of 409 until the claim's lease ends; failing every time, the claim ends with its lease. The request's
 * own outcome is never replaced by the release's error.
 */
async function letGo(ctx: PaymentContext, claim: KeyClaim | undefined): Promise<void> {
  if (!claim) return;
  try {
    await claim.release();
  } catch (err) {
    ctx.logger.warn({ err }, "an idempotency key's claim could not be given up; trying again after the answer");
    ctx.afterAnswer?.run(`claim:${randomUUID()}`, async () => {
      for (const ms of CLAIM_RELEASE_RETRIES_MS) {
        await new Promise((r) => setTimeout(r, ms));
        if (await claim.release().then(() => true, () => false)) return;
      }
      ctx.logger.warn("an idempotency key's claim could not be given up; it ends with its lease");
    });
  }
}

/**
 * Whether the balance read at authentication covers price and fee: then signing may come first.
 * Never for a token with spending controls: its price is judged by the hold before anything is signed.
 */
function coveredBySnapshot(ctx: PaymentContext, principal: Principal, req: X402Request, quote: X402Quote): boolean {
  if (holdControls(ctx, principal, { rail: "x402", url: req.url })) return false;
  return principal.balance.availableMicros >= quote.amountMicros + feeFor(quote.amountMicros, principal.plan);
}

/**
 * A rail or a host the controls refuse is refused before any connection: the rules that do not
 * depend on the price are judged here as the hold would judge them (it judges them again).
 */
async function refuseBeforeConnecting(ctx: PaymentContext, principal: Principal, req: X402Request): Promise<void> {
  const controls = holdControls(ctx, principal, { rail: "x402", url: req.url });
  if (!controls) return;
  const judged = judgeStatic(controls, principal.projectId, "x402", 0, ctx.clock());
  if (judged.kind !== "refused") return;
  await ctx.ledger.payments.recordRefusal({ projectId: principal.projectId, tokenId: principal.tokenId, rail: "x402", recipient: req.url, amountMicros: null, refusal: judged.refusal });
  throw refusalError(judged.refusal);
}

function hold(ctx: PaymentContext, principal: Principal, req: X402Request, rail: X402Rail, quote: X402Quote, railState: X402Quote["state"] | X402Signature["state"], status: "pending" | "processing"): Promise<CreatedPayment> {
  const feeMicros = feeFor(quote.amountMicros, principal.plan);
  // The request holds the key and leads the payment until it answers: at least as long as the rail needs to
  // send the paid retry and read its answer (payHeld), whatever PAYMENT_REQUEST_LEASE_MS says. A shorter lease
  // made every x402 payment fail before its signature left.
  const leaseMs = Math.max(ctx.config.workers.paymentRequestLeaseMs, rail.leaseNeededMs + SIGN_ROOM_MS);
  const leaseUntil = new Date(ctx.clock().getTime() + leaseMs).toISOString();
  return holdPayment(ctx, principal, {
    status,
    rail: "x402",
    railTxnType: "x402_payment",
    amountUnits: quote.amountMicros,
    feeUnits: feeMicros,
    amountMicros: quote.amountMicros,
    feeMicros,
    currency: "usdc",
    recipient: req.url,
    recipientJson: null,
    merchantName: new URL(req.url).host,
    description: req.description,
    idempotencyKey: req.idempotencyKey,
    metadata: req.metadata,
    railState,
    estimatedArrival: null,
    inFlightUntil: leaseUntil,
  });
}

/** Room in an x402 request's lease, beyond what the rail needs, for the hold's write and the signature. */
const SIGN_ROOM_MS = 5_000;

/** Sign (unless signed already), send the paid retry once, and record what the answer settles. */
async function payHeld(ctx: PaymentContext, rail: X402Rail, req: X402Request, h: Held): Promise<Payment> {
  let payment = h.payment;
  let signature: X402Signature;
  try {
    const leaseLeftMs = Date.parse(payment.leaseUntil ?? "") - ctx.clock().getTime();
    if (!(leaseLeftMs > rail.leaseNeededMs)) {
      throw unavailable("rail_unavailable", "The service was too busy to sign and send this x402 payment in time; nothing was sent, and the amount and fee were credited back. Pay again with a new idempotency key.");
    }
    if (h.signature) signature = h.signature;
    else {
      signature = await rail.sign(h.walletIndex, h.quote, { projectId: payment.projectId, idempotencyKey: req.idempotencyKey });
      payment = await ctx.ledger.payments.updatePayment(payment.id, { status: "processing", railState: x402States.write("held", signature.state) });
    }
  } catch (err) {
    // Nothing left the process: the payment fails and the hold is credited back at once.
    h.retry.close();
    await fail(ctx, payment, "x402_not_sent", "The payment could not be signed or sent safely; nothing was sent, the amount and fee were credited back.");
    throw err;
  }

  const sent = await rail.sendPaid(h.retry, req, signature, payment.id);
  if (sent.kind === "not_sent") {
    await fail(ctx, payment, "x402_not_sent", sent.reason);
    throw sent.error;
  }
  // One write: the reply, the settlement, and the end of the request's hold on the key. A proven
  // settlement stays leased to this process for the dispatcher, which sweeps the fee right after
  // the write; anything else goes to the worker. The answer waits neither for that write nor for the proof (decisions.md, "The paid
  // reply answers before its record"): the money was held and the authorization recorded before the
  // signature left, and until this write the payment stays leased to this request, so a repeat of its key
  // is told to retry and a crash leaves it to the worker, which lets the chain decide. The settlement's
  // proof (a read of the chain) comes first in that work, once the answer is on its socket.
  const reply: PaymentPatch = sent.reply ? { responseJson: JSON.stringify(sent.reply) } : {};
  const patchFor = (settlement: ProvenSettlement): PaymentPatch => ({
    ...reply,
    ...(settlement ? { txHash: settlement.txHash, railState: x402States.write("signed", settlement.state) } : {}),
    inFlightUntil: null,
    ...(settlement && ctx.dispatch ? {} : { leaseOwner: null, leaseUntil: null, nextAttemptAt: ctx.clock().toISOString() }),
  });
  const paid = payment;
  const record = async (settlement: ProvenSettlement, patch = patchFor(settlement)): Promise<Payment> => {
    let recorded: Payment;
    try {
      recorded = await ctx.ledger.payments.updatePayment(paid.id, patch);
    } catch (err) {
      // The lease expires and a worker resumes from the signed stage: the chain still decides.
      ctx.logger.error({ err, payment_id: paid.id }, "x402 payment could not be stored after the paid retry; a worker will resume it");
      return (await ctx.ledger.payments.getPayment(paid.id)) ?? paid;
    }
    if (settlement) ctx.dispatch?.(recorded);
    return recorded;
  };
  if (!ctx.afterAnswer) return await record(await sent.prove());
  if (req.proofInAnswer) {
    const settlement = await sent.prove();
    const patch = patchFor(settlement);
    ctx.afterAnswer.run(paid.id, () => record(settlement, patch));
    return { ...paid, ...patch };
  }
  ctx.afterAnswer.run(paid.id, async () => record(await sent.prove()));
  return { ...paid, ...reply };
}

/** Resolves a payment that nothing can pay any more: failed, amount and fee credited back. */
async function fail(ctx: PaymentContext, payment: Payment, code: FailureCode, reason: string): Promise<void> {
  const r = await ctx.ledger.payments.resolve(payment.id, "failed", { failureCode: code, failureReason: reason });
  if (r.changed) ctx.rails?.onFinal?.(r.payment, "failed");
}
