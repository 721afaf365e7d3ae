/**
 * A person's decision on a payment that waits for approval (above its token's `approval_above_usd`):
 * approved, the worker sends it; denied, it fails at once and is credited back (code
 * `approval_denied`). The CLI and the admin API both call this.
 */
import type { Clock } from "../ids.ts";
import type { Ledger, PaymentRow } from "../ledger/store.ts";

export type Decision = { kind: "decided"; payment: PaymentRow } | { kind: "not_awaiting"; detail: string };

/** `by` names who decided, as recorded with the payment ("operator", "token tok_… (aw_test_abcd…)", "cli"). */
export async function decidePayment(ctx: { ledger: Ledger; clock: Clock }, id: string, decision: "approved" | "denied", by: string | null = null): Promise<Decision> {
  const row = await ctx.ledger.decideApproval(id, decision, by);
  if (!row) {
    const p = await ctx.ledger.getPayment(id);
    if (!p) return { kind: "not_awaiting", detail: "no such payment" };
    const why = p.approval === null ? "it needs no approval" : p.approval === "awaiting" ? `its approval time ran out at ${p.approval_until}` : `it was ${p.approval} already`;
    return { kind: "not_awaiting", detail: `${why}; status ${p.status}` };
  }
  if (decision === "approved") return { kind: "decided", payment: row };
  const settled = await ctx.ledger.settleApproval(row);
  return { kind: "decided", payment: settled.payment ?? row };
}
