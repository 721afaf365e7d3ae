/**
 * A person's decision on a payment that waits for approval (above its token's `approval_above_usd`):
 * approved, the worker sends it; denied, it fails at once and is credited back (code
 * `approval_denied`). Who decided (an admin credential's id, or `cli:<user>`) and when are recorded on
 * the payment. The CLI and the admin API both call these.
 */
import type { Clock } from "../ids.ts";
import type { PaymentStore } from "../ledger/ports.ts";
import type { Payment } from "../domain/payment.ts";
import { formatUsdc } from "../money.ts";
import type { Actor } from "../domain/audit.ts";

/** A decision's reason is at most this long. */
export const DECISION_REASON_MAX_CHARS = 500;

export type Decision = { kind: "decided"; payment: Payment } | { kind: "not_awaiting"; detail: string; found: boolean };

/** Bounds of the pending list (oldest first). */
export const PENDING_PAGE_MAX = 200;

/**
 * `by` is recorded on the payment (an admin credential's id, `cli:<user>`); `actor`, when given, names the
 * decider in the payment and in the audit entry written with the decision; `reason` is kept on both.
 */
export async function decidePayment(ctx: { ledger: { payments: PaymentStore }; clock: Clock }, id: string, decision: "approved" | "denied", by: string, opts: { actor?: Actor; reason?: string | null } = {}): Promise<Decision> {
  const reason = opts.reason?.trim() ? opts.reason.trim().slice(0, DECISION_REASON_MAX_CHARS) : null;
  const row = await ctx.ledger.payments.decideApproval(id, decision, by, { ...(opts.actor ? { actor: opts.actor } : {}), reason });
  if (!row) {
    const p = await ctx.ledger.payments.getPayment(id);
    if (!p) return { kind: "not_awaiting", detail: "no such payment", found: false };
    const why = p.approval === null ? "it needs no approval" : p.approval === "awaiting" ? `its approval time ran out at ${p.approvalUntil}` : `it was ${p.approval} already${p.approvalDecidedBy ? ` by ${p.approvalDecidedBy} at ${p.approvalDecidedAt}` : ""}`;
    return { kind: "not_awaiting", detail: `${why}; status ${p.status}`, found: true };
  }
  if (decision === "approved") return { kind: "decided", payment: row };
  const settled = await ctx.ledger.payments.settleApproval(row);
  return { kind: "decided", payment: settled.payment ?? row };
}

/** The one JSON shape of a decision's outcome. */
export function decisionJson(p: Payment, decision: "approved" | "denied") {
  return { id: p.id, decision, status: p.status, decided_by: p.approvalDecidedBy ?? null, decided_by_name: p.approvalDecidedByName ?? null, decided_at: p.approvalDecidedAt ?? null, reason: p.approvalReason ?? null };
}

/** Payments waiting for a person, oldest first, of one project or all. */
export async function listPendingApprovals(ctx: { ledger: { payments: PaymentStore } }, opts: { projectId?: string; limit?: number }) {
  const limit = Math.min(PENDING_PAGE_MAX, Math.max(1, Math.trunc(opts.limit ?? PENDING_PAGE_MAX) || PENDING_PAGE_MAX));
  const rows = await ctx.ledger.payments.listAwaitingApprovals({ projectId: opts.projectId, limit });
  return rows.map((p) => ({ id: p.id, project_id: p.projectId, token_id: p.tokenId, rail: p.rail, amount_usd: Number(formatUsdc(p.amountMicros)), recipient: p.recipient, created_at: p.createdAt, approval_until: p.approvalUntil! }));
}
