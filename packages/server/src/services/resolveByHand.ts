/**
 * An operator ends a payment the settlement cannot drive because its rail state does not parse
 * (decisions.md, "A rail state that does not parse"). Nothing is read from that state: the operator has
 * looked at the chain and the provider and says what happened. `failed`: nothing moved, the amount and fee
 * are credited back (failure code `operator_resolved`); `completed`: the money left, the hold is spent.
 * Either way the payment is final through the same ledger write the rails use (its webhook event and
 * status history included), and who did it and why are recorded on the payment. A payment whose state
 * parses is refused: the settlement drives it, and a hand beside it could credit back money that moved.
 */
import { badRequest, conflict, notFound } from "../domain/errors.ts";
import type { PaymentStore } from "../ledger/ports.ts";
import type { Payment } from "../domain/payment.ts";
import { railStateProblem } from "../rails/railStates.ts";

/** The longest reason kept (the payment's `failure_reason` holds it with who resolved it). */
export const RESOLVE_REASON_MAX = 300;

export type ResolveByHand = { paymentId: string; outcome: "completed" | "failed"; reason: string; by: string; txHash?: string };

export async function resolveByHand(ctx: { ledger: { payments: PaymentStore } }, r: ResolveByHand): Promise<{ payment: Payment; problem: string }> {
  const reason = r.reason.trim();
  if (!reason) throw badRequest("invalid_request", "--reason is required: say what the chain and the provider showed (it is kept on the payment).");
  if (reason.length > RESOLVE_REASON_MAX) throw badRequest("invalid_request", `--reason is at most ${RESOLVE_REASON_MAX} characters.`);
  if (r.txHash !== undefined && !/^0x[0-9a-fA-F]{64}$/.test(r.txHash)) throw badRequest("invalid_request", "--tx-hash must be a transaction hash (0x and 64 hex digits).");
  if (r.txHash !== undefined && r.outcome !== "completed") throw badRequest("invalid_request", "--tx-hash goes with --as completed only: a failed payment moved nothing.");
  const p = await ctx.ledger.payments.getPayment(r.paymentId);
  if (!p) throw notFound("payment_not_found", `No payment ${r.paymentId}.`);
  if (p.status !== "pending" && p.status !== "processing") throw conflict("payment_final", `Payment ${p.id} is ${p.status} already; nothing changed.`);
  const problem = railStateProblem(p);
  if (!problem) {
    throw conflict("rail_state_readable", `Payment ${p.id}'s rail state parses, so the settlement drives it to a final status; only a payment whose rail state does not parse is resolved by hand.`);
  }
  const note = `Resolved as ${r.outcome} by ${r.by}: ${reason}`;
  const out = await ctx.ledger.payments.resolve(
    p.id,
    r.outcome,
    r.outcome === "failed" ? { failureCode: "operator_resolved", failureReason: note } : { failureReason: note, ...(r.txHash ? { txHash: r.txHash.toLowerCase() } : {}) },
  );
  if (!out.changed) throw conflict("payment_final", `Payment ${p.id} became ${out.payment.status} meanwhile; nothing changed.`);
  return { payment: out.payment, problem };
}
