/**
 * A person's decision on a payment that waits for approval (above its token's `approval_above_usd`):
 * approved, the worker sends it; denied, it fails at once and is credited back (code
 * `approval_denied`). Who decided (an admin credential's id, or `cli:<user>`) and when are recorded on
 * the payment. The CLI and the admin API both call these.
 */
import type { Clock } from "../ids.ts";
import type { PaymentStore } from "../ledger/ports.ts";
import type { PaymentRow } from "../ledger/payments.ts";
import { formatUsdc } from "../money.ts";

export type Decision = { kind: "decided"; payment: PaymentRow } | { kind: "not_awaiting"; detail: string; found: boolean };

/** Bounds of the pending list (oldest first). */
export const PENDING_PAGE_MAX = 200;

export async function decidePayment(ctx: { ledger: { payments: PaymentStore }; clock: Clock }, id: string, decision: "approved" | "denied", by: string): Promise<Decision> {
  const row = await ctx.ledger.payments.decideApproval(id, decision, by);
  if (!row) {
    const p = await ctx.ledger.payments.getPayment(id);
    if (!p) return { kind: "not_awaiting", detail: "no such payment", found: false };
    const why = p.approval === null ? "it needs no approval" : p.approval === "awaiting" ? `its approval time ran out at ${p.approval_until}` : `it was ${p.approval} already${p.approval_decided_by ? ` by ${p.approval_decided_by} at ${p.approval_decided_at}` : ""}`;
    return { kind: "not_awaiting", detail: `${why}; status ${p.status}`, found: true };
  }
  if (decision === "approved") return { kind: "decided", payment: row };
  const settled = await ctx.ledger.payments.settleApproval(row);
  return { kind: "decided", payment: settled.payment ?? row };
}

/** The one JSON shape of a decision's outcome. */
export function decisionJson(p: PaymentRow, decision: "approved" | "denied") {
  return { id: p.id, decision, status: p.status, decided_by: p.approval_decided_by ?? null, decided_at: p.approval_decided_at ?? null };
}

/** Payments waiting for a person, oldest first, of one project or all. */
export async function listPendingApprovals(ctx: { ledger: { payments: PaymentStore } }, opts: { projectId?: string; limit?: number }) {
  const limit = Math.min(PENDING_PAGE_MAX, Math.max(1, Math.trunc(opts.limit ?? PENDING_PAGE_MAX) || PENDING_PAGE_MAX));
  const rows = await ctx.ledger.payments.listAwaitingApprovals({ projectId: opts.projectId, limit });
  return rows.map((p) => ({ id: p.id, project_id: p.project_id, token_id: p.token_id, rail: p.rail, amount_usd: Number(formatUsdc(p.amount_micros)), recipient: p.recipient, created_at: p.created_at, approval_until: p.approval_until! }));
}
