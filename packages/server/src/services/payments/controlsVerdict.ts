/**
 * What the spending controls of a token and its project would say to a payment, without making it: the
 * rules the hold judges (domain/spending.ts: `judgeStatic`, then `windowVerdict` over each limited
 * window's counter, read as it stands), and what remains in every window. The hold judges again when the
 * payment is made, in the write that debits; this answer can only be older than that one.
 */
import type { QuoteResponse } from "@agentwallet/api";
import type { Principal } from "../../domain/principal.ts";
import { type RecipientOf, type SpendRail, judgeStatic, windowVerdict } from "../../domain/spending.ts";
import { type SpendingContext, getLimits, holdControls } from "../spendingControls.ts";

export type ControlsVerdict = NonNullable<QuoteResponse["controls"]>;

export async function controlsVerdict(ctx: SpendingContext, principal: Principal, recipient: RecipientOf & { rail: SpendRail }, amountMicros: number): Promise<ControlsVerdict> {
  const controls = holdControls(ctx, principal, recipient);
  if (!controls) return { verdict: "would_pay", code: null, detail: "No spending controls apply to this token or its project.", windows: [] };
  const windows = (await getLimits(ctx, principal)).windows.map(({ window_start: _start, ...w }) => w);
  const judged = judgeStatic(controls, principal.projectId, recipient.rail, amountMicros, ctx.clock());
  if (judged.kind === "refused") return { verdict: "refused", code: judged.refusal.code, detail: judged.refusal.detail, windows };
  const spent = await ctx.ledger.payments.windowSpending(judged.windows.map((w) => ({ scope: w.scope, scopeId: w.scopeId, kind: w.kind, start: w.start, projectId: principal.projectId })));
  for (const [i, w] of judged.windows.entries()) {
    const refusal = windowVerdict(w, spent[i]!, amountMicros);
    if (refusal) return { verdict: "refused", code: refusal.code, detail: refusal.detail, windows };
  }
  if (judged.approval) return { verdict: "needs_approval", code: null, detail: "Above the approval threshold: the payment would wait for a person's approval.", windows };
  return { verdict: "would_pay", code: null, detail: "Within this token's and its project's spending controls.", windows };
}
