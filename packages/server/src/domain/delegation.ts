/**
 * Child tokens: what a token that may `delegate` can hand a sub-agent. A child is never wider than its
 * parent in any dimension — permissions, each limit, the allowance, the allow-list, the block-list, the
 * rails, the approval threshold, the expiry — and a field its creator does not give is inherited from the
 * parent, so the narrowest request is the default. Pure rules; services/delegation.ts applies them to the
 * parent's row as it is when the child is written. The hold still judges every ancestor's controls on each
 * payment (spending.ts), so an operator who narrows a parent later narrows its children at once.
 */
import type { Permission } from "@agentwallet/api";
import { type SpendingControls, displayRecipient, recipientMatches, usd } from "./spending.ts";

/** A token as the rules compare it: its own permissions, controls, allowance and expiry. */
export type DelegationBounds = {
  permissions: readonly Permission[];
  controls: SpendingControls | null;
  allowanceMicros: number | null;
  expiresAt: string | null;
};

/** The child as asked for, its fields not given already filled from the parent (inheritFromParent). */
export type ChildBounds = DelegationBounds;

const NO_CONTROLS: SpendingControls = { limits: [], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };

/**
 * The child's controls with what its creator left out taken from the parent: a limit per interval not
 * named, the lists and the threshold when not given (`given` says which fields the request named).
 */
export function inheritFromParent(
  parent: SpendingControls | null,
  child: SpendingControls,
  given: { limits: boolean; allowedRecipients: boolean; blockedRecipients: boolean; allowedRails: boolean; approvalAbove: boolean },
): SpendingControls {
  const p = parent ?? NO_CONTROLS;
  const named = new Set(child.limits.map((l) => l.interval));
  return {
    limits: given.limits ? [...child.limits, ...p.limits.filter((l) => !named.has(l.interval))] : p.limits,
    allowedRecipients: given.allowedRecipients ? child.allowedRecipients : p.allowedRecipients,
    blockedRecipients: given.blockedRecipients ? child.blockedRecipients : p.blockedRecipients,
    allowedRails: given.allowedRails ? child.allowedRails : p.allowedRails,
    approvalAboveMicros: given.approvalAbove ? child.approvalAboveMicros : p.approvalAboveMicros,
  };
}

/**
 * The first dimension in which `child` would be wider than `parent`, as a sentence for the refusal's
 * detail; null when it is within the parent everywhere.
 */
export function widerThanParent(parent: DelegationBounds, child: ChildBounds): string | null {
  const extra = child.permissions.filter((p) => !parent.permissions.includes(p));
  if (extra.length) return `permissions: this token has ${parent.permissions.join(",")}, so a child may not have ${extra.join(",")}`;
  const p = parent.controls ?? NO_CONTROLS;
  const c = child.controls ?? NO_CONTROLS;
  for (const pl of p.limits) {
    const cl = c.limits.find((l) => l.interval === pl.interval);
    if (!cl) return `spending_limits: this token's ${pl.interval} limit is ${usd(pl.amountMicros)}; a child must have one of at most that`;
    if (cl.amountMicros > pl.amountMicros) return `spending_limits: the child's ${pl.interval} limit ${usd(cl.amountMicros)} is above this token's ${usd(pl.amountMicros)}`;
  }
  const ceiling = minOf(parent.allowanceMicros, p.limits.find((l) => l.interval === "all_time")?.amountMicros ?? null);
  if (ceiling !== null && (child.allowanceMicros === null || child.allowanceMicros > ceiling)) {
    return `allowance_usd: a child may spend at most ${usd(ceiling)} in all (this token's allowance or all_time limit), not ${child.allowanceMicros === null ? "without bound" : usd(child.allowanceMicros)}`;
  }
  if (p.allowedRecipients !== null) {
    if (c.allowedRecipients === null) return `allowed_recipients: this token may pay only ${p.allowedRecipients.map(displayRecipient).join(", ") || "nobody"}; a child's list must stay within it`;
    const outside = c.allowedRecipients.find((k) => !p.allowedRecipients!.some((pk) => recipientMatches(pk, k)));
    if (outside !== undefined) return `allowed_recipients: ${displayRecipient(outside)} is not on this token's allow-list`;
  }
  const unblocked = p.blockedRecipients.find((k) => !c.blockedRecipients.includes(k));
  if (unblocked !== undefined) return `blocked_recipients: this token blocks ${displayRecipient(unblocked)}; a child must block it too`;
  if (p.allowedRails !== null) {
    if (c.allowedRails === null) return `allowed_rails: this token may pay by ${p.allowedRails.join(", ") || "no rail"} only; a child may not pay by every rail`;
    const rail = c.allowedRails.find((r) => !p.allowedRails!.includes(r));
    if (rail !== undefined) return `allowed_rails: this token may not pay by ${rail}, so a child may not either`;
  }
  if (p.approvalAboveMicros !== null && (c.approvalAboveMicros === null || c.approvalAboveMicros > p.approvalAboveMicros)) {
    return `approval_above_usd: this token needs approval above ${usd(p.approvalAboveMicros)}; a child's threshold may not be looser (${c.approvalAboveMicros === null ? "none" : usd(c.approvalAboveMicros)})`;
  }
  if (parent.expiresAt !== null && (child.expiresAt === null || child.expiresAt > parent.expiresAt)) {
    return `expires_in_seconds: this token expires at ${parent.expiresAt}; a child must expire by then`;
  }
  return null;
}

function minOf(a: number | null, b: number | null): number | null {
  if (a === null) return b;
  if (b === null) return a;
  return Math.min(a, b);
}
