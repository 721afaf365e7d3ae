/**
 * Payments that wait for a person, and the refusals of the spending controls, on the console's Approvals,
 * overview and token pages; a decision is the CLI's and the admin API's own (services/approvals.ts
 * `decidePayment`), recorded under the name `authorizeChange` gives the viewer.
 */
import type { ApprovalItem, RefusalItem, RefusalLimit, Viewer } from "@agentwallet/console";
import type { Payment } from "../../domain/payment.ts";
import { decidePayment } from "../approvals.ts";
import { type ConsoleDeps, authorizeChange } from "./viewers.ts";

/** Awaiting payments shown at most; the decided ones shown. */
const AWAITING_SHOWN_MAX = 100;
const DECIDED_SHOWN_MAX = 20;

function approvalItem(p: Payment, prefixes: Map<string, string>): ApprovalItem {
  return {
    id: p.id,
    rail: p.rail,
    amount_micros: Number(p.amountMicros),
    recipient: p.rail === "fiat" ? `${p.recipient} (bank account)` : p.recipient,
    description: p.description,
    token_id: p.tokenId,
    token_prefix: p.tokenId ? (prefixes.get(p.tokenId) ?? null) : null,
    status: p.status,
    created_at: p.createdAt,
    approval: p.approval as ApprovalItem["approval"],
    approval_until: p.approvalUntil,
    decided_by: p.approvalDecidedBy,
    decided_by_name: p.approvalDecidedByName,
    decided_at: p.approvalDecidedAt,
    reason: p.approvalReason,
    tx_hash: p.rail === "fiat" ? null : p.txHash,
  };
}

/** The display prefix of each token of the project, by id: a list names the token that paid, never its secret. */
async function tokenPrefixes(deps: Pick<ConsoleDeps, "ledger">, projectId: string): Promise<Map<string, string>> {
  return new Map((await deps.ledger.tokens.list(projectId)).map((t) => [t.id, t.display_prefix]));
}

/** Payments waiting for a person (oldest first) and the latest decided ones (newest first). */
export async function listApprovals(deps: Pick<ConsoleDeps, "ledger">, projectId: string) {
  const [awaiting, decided, prefixes] = await Promise.all([
    deps.ledger.payments.listAwaitingApprovals({ projectId, limit: AWAITING_SHOWN_MAX }),
    deps.ledger.payments.listDecidedApprovals(projectId, DECIDED_SHOWN_MAX),
    tokenPrefixes(deps, projectId),
  ]);
  return { awaiting: awaiting.map((p) => approvalItem(p, prefixes)), decided: decided.map((p) => approvalItem(p, prefixes)) };
}

/** The approval of one payment of the project, if it had one. */
export async function getApproval(deps: Pick<ConsoleDeps, "ledger">, projectId: string, paymentId: string): Promise<ApprovalItem | null> {
  const p = await deps.ledger.payments.getPayment(paymentId);
  if (!p || p.projectId !== projectId || p.approval === null) return null;
  const t = p.tokenId ? await deps.ledger.tokens.get(p.tokenId) : undefined;
  return approvalItem(p, new Map(t ? [[t.id, t.display_prefix]] : []));
}

export async function decideApproval(deps: ConsoleDeps, viewer: Viewer, projectId: string, paymentId: string, decision: "approved" | "denied", reason: string | null = null): Promise<{ ok: true } | { ok: false; detail: string }> {
  const actor = await authorizeChange(deps, viewer, projectId, "decide");
  const p = await deps.ledger.payments.getPayment(paymentId);
  if (!p || p.projectId !== projectId) return { ok: false, detail: "There is no such payment in this project." };
  const out = await decidePayment(deps, paymentId, decision, actor.id, { actor, reason });
  return out.kind === "decided" ? { ok: true } : { ok: false, detail: `This payment no longer waits for approval: ${out.detail}.` };
}

/** Payments the controls refused lately, of one token (and the tokens below it) or the whole project, newest first, with what a limit measured. */
export async function listRefusals(deps: Pick<ConsoleDeps, "ledger">, projectId: string, tokenId: string | null, limit: number): Promise<RefusalItem[]> {
  const [rows, tokens] = await Promise.all([deps.ledger.payments.listRefusals({ projectId, ...(tokenId ? { tokenId } : {}), limit }), deps.ledger.tokens.list(projectId)]);
  const byId = new Map(tokens.map((t) => [t.id, t]));
  return rows.map((r) => ({
    at: r.created_at,
    token_id: r.token_id,
    token_name: r.token_id ? (byId.get(r.token_id)?.name ?? null) : null,
    token_prefix: r.token_id ? (byId.get(r.token_id)?.display_prefix ?? null) : null,
    code: r.code,
    detail: r.detail,
    rail: r.rail,
    recipient: r.recipient,
    amount_micros: r.amount_micros === null ? null : Number(r.amount_micros),
    limit: refusalLimit(r, byId),
  }));
}

type RefusalRow = Awaited<ReturnType<ConsoleDeps["ledger"]["payments"]["listRefusals"]>>[number];

/** A limit refusal's measures as recorded (migration 0033), or null: another code, or a row from before. */
function refusalLimit(r: RefusalRow, tokens: Map<string, { id: string; name: string | null; display_prefix: string }>): RefusalLimit | null {
  if (r.rule === null || r.rule_level === null || r.limit_micros === null) return null;
  const owner = r.rule_level === "ancestor" && r.rule_owner_id ? tokens.get(r.rule_owner_id) : undefined;
  const micros = (n: number | null) => (n === null ? null : Number(n));
  return {
    rule: r.rule as RefusalLimit["rule"],
    level: r.rule_level as RefusalLimit["level"],
    owner: owner ? { id: owner.id, name: owner.name, prefix: owner.display_prefix } : null,
    limit_micros: Number(r.limit_micros),
    spent_micros: micros(r.spent_micros),
    remaining_micros: micros(r.remaining_micros),
  };
}
