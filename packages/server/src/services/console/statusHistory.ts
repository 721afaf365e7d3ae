/**
 * A transaction's way to its status in words, for the console's transaction page: pure functions of what the
 * ledger recorded (its status history, or its rows for transactions older than that history) and the payment row.
 */
import type { HistoryEntry } from "@agentwallet/console";
import type { Payment } from "../../domain/payment.ts";
import { approvalField } from "../payments/render.ts";

/**
 * A transaction's way to its status: the transitions its webhooks report, as the ledger's triggers recorded
 * them (`status_history`, decisions.md "Status history"), each with what the payment row says of it, and the
 * approval's decision, which changes no status, after the wait for it.
 */
export function historyOfEvents(events: { type: string; status: string; at: string }[], p: Payment | undefined): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  for (const e of events) {
    // A deposit's events carry the deposit's own status (seen, credited); its transaction's is pending, then completed, as the event's body says.
    const status = e.type === "deposit.pending" ? "pending" : e.type === "deposit.credited" ? "completed" : e.status;
    const entry = (text: string) => out.push({ at: e.at, status, text });
    switch (e.type) {
      case "payment.created":
        entry(p ? `Created; ${usdOf(p.amountMicros + p.feeMicros)} held from the balance` : "Created");
        break;
      case "payment.approval_required":
        entry(`Waits for approval (above the token's threshold)${p?.approvalUntil ? ` until ${utc(p.approvalUntil)}` : ""}`);
        if (p?.approval === "expired") out.push({ at: p.approvalUntil ?? p.updatedAt, status: e.status, text: "Approval time ran out" });
        else if (p && p.approval && p.approval !== "awaiting") out.push(decisionEntry(p, e.status));
        break;
      case "payment.processing":
        entry(p?.txHash && p.rail !== "fiat" ? `Sent on-chain: ${p.txHash}` : p?.rail === "fiat" ? "Processing: the bank payout is under way" : "Processing");
        break;
      case "payment.completed":
        entry("Completed");
        break;
      case "payment.failed":
      case "payment.reversed":
        entry(`${e.type === "payment.failed" ? "Failed" : "Reversed"}${p?.failureCode ? ` (${p.failureCode})` : ""}: ${p?.failureReason ?? "no reason recorded"}`);
        break;
      case "deposit.pending":
        entry("Deposit seen on-chain; credited once confirmed");
        break;
      case "deposit.credited":
        entry("Deposit confirmed on-chain and credited");
        break;
      default:
        entry(e.type);
    }
  }
  return out;
}

/**
 * A transaction's way to its status for rows older than `status_history` (migration 0024), from what the
 * ledger records: its
 * creation, its payment's approval and who decided it, completion, or the last change with the failure.
 */
export function historyOf(
  t: { type: string; status: string; created_at: string; completed_at: string | null },
  p: Payment | undefined,
): HistoryEntry[] {
  const out: HistoryEntry[] = [];
  if (t.type === "usdc_fund") out.push({ at: t.created_at, status: t.status, text: "Deposit confirmed on-chain and credited" });
  else out.push({ at: t.created_at, status: "pending", text: p ? `Created; ${usdOf(p.amountMicros + p.feeMicros)} held from the balance` : "Created" });
  if (p?.approval) {
    out.push({ at: p.createdAt, status: "pending", text: `Waits for approval (above the token's threshold) until ${utc(p.approvalUntil)}` });
    if (p.approval === "expired") out.push({ at: p.approvalUntil ?? p.updatedAt, status: "pending", text: "Approval time ran out" });
    else if (p.approval !== "awaiting") out.push(decisionEntry(p, "pending"));
  }
  if (p?.txHash && p.rail !== "fiat") out.push({ at: p.completedAt ?? p.updatedAt, status: p.status, text: `Sent on-chain: ${p.txHash}` });
  if (t.status === "completed" && t.completed_at && t.type !== "usdc_fund") out.push({ at: t.completed_at, status: "completed", text: "Completed" });
  if ((t.status === "failed" || t.status === "reversed") && p) {
    out.push({ at: p.updatedAt, status: t.status, text: `${t.status === "failed" ? "Failed" : "Reversed"}${p.failureCode ? ` (${p.failureCode})` : ""}: ${p.failureReason ?? "no reason recorded"}` });
  }
  if ((t.status === "pending" || t.status === "processing") && p && p.updatedAt > p.createdAt) out.push({ at: p.updatedAt, status: t.status, text: `${t.status === "processing" ? "Processing" : "Pending"} (last change)` });
  return out.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
}

/** The decision's entry: its words, and the reason and the deciding operator's name as fields (as payment.approved / payment.denied carry them). */
function decisionEntry(p: Payment, status: string): HistoryEntry {
  const { approval } = approvalField(p);
  return { at: p.approvalDecidedAt ?? p.updatedAt, status, text: decisionText(p), ...(approval?.reason ? { reason: approval.reason } : {}), ...(approval?.decided_by_name ? { decided_by_name: approval.decided_by_name } : {}) };
}

/** "Approved by ops laptop (adm_…): expected invoice": the decider by name (and id), and the reason given. */
export function decisionText(p: Pick<Payment, "approval" | "approvalDecidedBy" | "approvalDecidedByName" | "approvalReason">): string {
  const who = p.approvalDecidedByName ? `${p.approvalDecidedByName}${p.approvalDecidedBy ? ` (${p.approvalDecidedBy})` : ""}` : p.approvalDecidedBy;
  return `${p.approval === "approved" ? "Approved" : "Denied"}${who ? ` by ${who}` : ""}${p.approvalReason ? `: ${p.approvalReason}` : ""}`;
}

const utc = (iso: string | null) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : "");
const usdOf = (micros: number) => `$${(Number(micros) / 1_000_000).toFixed(2)}`;
