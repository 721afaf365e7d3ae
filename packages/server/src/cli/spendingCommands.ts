/**
 * CLI commands of spending controls: the controls of a token (`tokens create … --daily-limit-usd 10`,
 * `tokens update TOKEN_ID …`) and of a project (`projects limits ID …`), approvals
 * (`payments pending|approve|deny`) and the refusal log (`refusals list`). Each is the service
 * function the admin API calls too (services/spendingControls.ts, services/approvals.ts).
 */
import { cliActor, type Command, type CommandInput, CliError, UsageError, need, needArg, withServices } from "./command.ts";
import { parseControls } from "../domain/spending.ts";
import { DomainError } from "../domain/errors.ts";
import { type BankKey, type WireControls, controlsColumn, listRefusals, parseControlsInput, renderControls, updateControls } from "../services/spendingControls.ts";
import { decidePayment, decisionJson, listPendingApprovals } from "../services/approvals.ts";
import { resolveByHand } from "../services/resolveByHand.ts";

/** The control options of `tokens create|update` and `projects limits`. */
export const CONTROL_OPTIONS = {
  "max-payment-usd": { type: "string" },
  "daily-limit-usd": { type: "string" },
  "weekly-limit-usd": { type: "string" },
  "monthly-limit-usd": { type: "string" },
  "total-limit-usd": { type: "string" },
  allow: { type: "string", multiple: true },
  block: { type: "string", multiple: true },
  rails: { type: "string" },
  "approval-above-usd": { type: "string" },
  "clear-limits": { type: "boolean" },
  limit: { type: "string" },
} as const;

const LIMIT_FLAGS = [
  ["max-payment-usd", "per_payment"],
  ["daily-limit-usd", "daily"],
  ["weekly-limit-usd", "weekly"],
  ["monthly-limit-usd", "monthly"],
  ["total-limit-usd", "all_time"],
] as const;

function usdOption(v: unknown, name: string): number | null {
  if (v === "none") return null;
  const n = Number(v);
  if (typeof v !== "string" || !/^\d+(\.\d{1,6})?$/.test(v) || !(n > 0)) throw new UsageError(`--${name} must be an amount in USD such as 10 or 2.50 (or "none" to remove it)`);
  return n;
}

/**
 * The wire controls the options name, over what is stored (`stored`, the column): only the options given
 * change anything, and a limit flag changes only its interval. Null when no control option is given.
 */
export function wireFromOptions(options: CommandInput["options"], stored: string | null): WireControls | null {
  const o = options as Record<string, unknown>;
  const base = parseControls(stored);
  const wire: WireControls = {};
  const limits = new Map((options["clear-limits"] ? [] : (base?.limits ?? [])).map((l) => [l.interval, l.amountMicros / 1_000_000] as const));
  let limitsChanged = Boolean(options["clear-limits"]);
  for (const [flag, interval] of LIMIT_FLAGS) {
    if (o[flag] === undefined) continue;
    limitsChanged = true;
    const v = usdOption(o[flag], flag);
    if (v === null) limits.delete(interval);
    else limits.set(interval, v);
  }
  if (limitsChanged) wire.spending_limits = [...limits].map(([interval, amount_usd]) => ({ interval, amount_usd }));
  if (o.allow !== undefined) wire.allowed_recipients = (o.allow as string[]).includes("any") ? null : (o.allow as string[]);
  if (o.block !== undefined) wire.blocked_recipients = (o.block as string[]).filter((b) => b !== "none");
  if (o.rails !== undefined) wire.allowed_rails = o.rails === "any" ? null : (String(o.rails).split(",").map((r) => r.trim()) as WireControls["allowed_rails"]);
  if (o["approval-above-usd"] !== undefined) wire.approval_above_usd = usdOption(o["approval-above-usd"], "approval-above-usd");
  return Object.keys(wire).length === 0 ? null : wire;
}

/** The stored column the options make of `stored` (what `tokens update` writes). */
export function controlsFromOptions(options: CommandInput["options"], stored: string | null, bankKey: BankKey): { changed: boolean; column: string | null } {
  const wire = wireFromOptions(options, stored);
  if (!wire) return { changed: false, column: stored };
  try {
    return { changed: true, column: controlsColumn(parseControlsInput(wire, bankKey, parseControls(stored))) };
  } catch (err) {
    if (err instanceof DomainError) throw new UsageError(err.detail);
    throw err;
  }
}

function describeControls(c: ReturnType<typeof renderControls>): string {
  if (!c) return "no spending controls";
  const parts = [
    ...c.spending_limits.map((l) => `${l.interval} ${l.amount_usd} USD`),
    c.allowed_recipients ? `allowed: ${c.allowed_recipients.join(", ") || "nobody"}` : "",
    c.blocked_recipients.length ? `blocked: ${c.blocked_recipients.join(", ")}` : "",
    c.allowed_rails ? `rails: ${c.allowed_rails.join(",")}` : "",
    c.approval_above_usd !== null ? `approval above ${c.approval_above_usd} USD` : "",
  ];
  return parts.filter(Boolean).join("; ") || "no spending controls";
}

/** `tokens update` and `projects limits`: the options over the stored controls, through the service. */
async function changeControls({ config, args, options, io }: CommandInput, scope: "token" | "project"): Promise<number> {
  const id = args[0];
  if (!id) {
    throw new UsageError(scope === "token"
      ? "usage: agentwallet tokens update TOKEN_ID [--daily-limit-usd N] [--max-payment-usd N] [--allow HOST|0x…|bank:ROUTING:ACCOUNT …] [--rails x402,usdc_transfer,fiat] [--approval-above-usd N]"
      : "usage: agentwallet projects limits PROJECT_ID [the same options as tokens update]");
  }
  const controls = await withServices(config, async (c) => {
    const stored = scope === "token" ? (await c.ledger.tokens.get(id))?.spending_controls : (await c.ledger.projects.get(id))?.spending_controls;
    if (stored === undefined) throw new CliError(`no ${scope} with id ${id}`);
    const wire = wireFromOptions(options, stored);
    return wire ? updateControls(c, scope, id, wire, cliActor()) : renderControls(parseControls(stored));
  });
  io.out(scope === "token" ? `Token ${id}: ${describeControls(controls)}.` : `Project ${id} (every token obeys these too): ${describeControls(controls)}.`, { id, spending_controls: controls });
  return 0;
}

export const spendingCommands: Record<string, Command> = {
  "tokens update": async (input) => changeControls(input, "token"),
  "projects limits": async (input) => changeControls(input, "project"),

  "payments pending": async ({ config, options, io }) => {
    const projectId = typeof options.project === "string" ? options.project : undefined;
    const rows = await withServices(config, (c) => listPendingApprovals(c, { projectId }));
    io.out(rows.map((p) => `${p.id}  ${p.project_id}  ${p.rail.padEnd(13)} ${p.amount_usd} USD to ${p.recipient}  until ${p.approval_until}`).join("\n") || "No payments wait for approval.", rows);
    return 0;
  },

  "payments approve": async (input) => decide(input, "approved"),
  "payments deny": async (input) => decide(input, "denied"),

  "payments resolve": async ({ config, args, options, io }) => {
    const id = needArg(args, "payments resolve PAYMENT_ID --as failed|completed --reason TEXT");
    const outcome = need(options, "as");
    if (outcome !== "failed" && outcome !== "completed") throw new UsageError(`--as must be failed or completed (got "${outcome}")`);
    const reason = need(options, "reason");
    const txHash = typeof options["tx-hash"] === "string" ? options["tx-hash"] : undefined;
    const out = await withServices(config, (c) => resolveByHand(c, { paymentId: id, outcome, reason, by: cliActor().id, txHash }));
    io.out(
      `${out.payment.id} is ${out.payment.status}${outcome === "failed" ? ": amount and fee credited back" : ""}. Its rail state did not parse: ${out.problem}`,
      { id: out.payment.id, status: out.payment.status, failure_code: out.payment.failureCode, failure_reason: out.payment.failureReason, tx_hash: out.payment.txHash },
    );
    return 0;
  },

  "refusals list": async ({ config, options, io }) => {
    const projectId = typeof options.project === "string" ? options.project : undefined;
    const rows = await withServices(config, (c) => listRefusals(c, { projectId, limit: options.limit === undefined ? undefined : Number(options.limit) }));
    io.out(rows.map((r) => `${r.created_at}  ${r.token_id ?? "-"}  ${r.code}  ${r.rail} ${r.recipient}\n    ${r.detail}`).join("\n") || "No refusals.", rows);
    return 0;
  },
};

async function decide({ config, args, options, io }: CommandInput, decision: "approved" | "denied"): Promise<number> {
  const id = needArg(args, `payments ${decision === "approved" ? "approve" : "deny"} PAYMENT_ID [--reason TEXT]`);
  const actor = cliActor();
  const reason = typeof options.reason === "string" ? options.reason : null;
  const out = await withServices(config, (c) => decidePayment(c, id, decision, actor.id, { actor, reason }));
  if (out.kind === "not_awaiting") throw new CliError(`payment ${id} is not waiting for approval (${out.detail})`);
  io.out(
    decision === "approved" ? `Approved ${id}: the running server's worker sends it now.` : `Denied ${id}: failed and credited back.`,
    decisionJson(out.payment, decision),
  );
  return 0;
}
