/**
 * CLI commands of spending controls: the controls of a token (`tokens create … --daily-limit-usd 10`,
 * `tokens update TOKEN_ID …`) and of a project (`projects limits ID …`), approvals
 * (`payments pending|approve|deny`) and the refusal log (`refusals list`). Each is the service
 * function the admin API calls too (services/spendingControls.ts, services/approvals.ts).
 */
import { type Command, type CommandInput, CliError } from "./command.ts";
import type { Config } from "../config.ts";
import { loadRecipientHashKey, openLedger } from "../deps.ts";
import type { Ledger } from "../ledger/store.ts";
import { parseControls } from "../domain/spending.ts";
import { ApiError } from "../domain/errors.ts";
import { type WireControls, controlsColumn, parseControlsInput, renderControls } from "../services/spendingControls.ts";
import { decidePayment } from "../services/approvals.ts";
import { systemClock } from "../ids.ts";
import { formatUsdc } from "../money.ts";

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
  if (typeof v !== "string" || !/^\d+(\.\d{1,6})?$/.test(v) || !(n > 0)) throw new CliError(`--${name} must be an amount in USD such as 10 or 2.50 (or "none" to remove it)`);
  return n;
}

/** The wire controls the options name, over what is stored (only the options given change anything). */
export function controlsFromOptions(options: CommandInput["options"], stored: string | null, bankKey: Uint8Array | (() => Uint8Array)): { changed: boolean; column: string | null } {
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
  if (Object.keys(wire).length === 0) return { changed: false, column: stored };
  try {
    return { changed: true, column: controlsColumn(parseControlsInput(wire, typeof bankKey === "function" ? bankKey() : bankKey, base)) };
  } catch (err) {
    if (err instanceof ApiError) throw new CliError(err.detail);
    throw err;
  }
}

async function withLedger<T>(config: Config, fn: (l: Ledger) => Promise<T>): Promise<T> {
  const { ledger, opened } = await openLedger(config);
  try {
    return await fn(ledger);
  } finally {
    await opened.close();
  }
}

function describeControls(column: string | null): string {
  const c = renderControls(parseControls(column));
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

/** Sets the token's controls from the options; used after `tokens create` and by `tokens update`. */
export async function applyTokenControls(config: Config, ledger: Ledger, tokenId: string, options: CommandInput["options"]): Promise<string | null> {
  const token = await ledger.getToken(tokenId);
  if (!token) throw new CliError(`no token with id ${tokenId}`);
  const { changed, column } = controlsFromOptions(options, token.spending_controls, () => loadRecipientHashKey(config));
  if (changed) await ledger.setSpendingControls("token", tokenId, column);
  return column;
}

export const spendingCommands: Record<string, Command> = {
  "tokens update": async ({ config, args, options, io }) => {
    const id = args[0];
    if (!id) throw new CliError("usage: agentwallet tokens update TOKEN_ID [--daily-limit-usd N] [--max-payment-usd N] [--allow HOST|0x…|bank:ROUTING:ACCOUNT …] [--rails x402,usdc_transfer,fiat] [--approval-above-usd N]");
    const column = await withLedger(config, (l) => applyTokenControls(config, l, id, options));
    io.out(`Token ${id}: ${describeControls(column)}.`, { id, spending_controls: renderControls(parseControls(column)) });
    return 0;
  },

  "projects limits": async ({ config, args, options, io }) => {
    const id = args[0];
    if (!id) throw new CliError("usage: agentwallet projects limits PROJECT_ID [the same options as tokens update]");
    const column = await withLedger(config, async (l) => {
      const project = await l.getProject(id);
      if (!project) throw new CliError(`no project with id ${id}`);
      const { changed, column } = controlsFromOptions(options, project.spending_controls, () => loadRecipientHashKey(config));
      if (changed) await l.setSpendingControls("project", id, column);
      return column;
    });
    io.out(`Project ${id} (every token obeys these too): ${describeControls(column)}.`, { id, spending_controls: renderControls(parseControls(column)) });
    return 0;
  },

  "payments pending": async ({ config, options, io }) => {
    const projectId = typeof options.project === "string" ? options.project : undefined;
    const rows = await withLedger(config, (l) => l.listAwaitingApprovals({ projectId, limit: 200 }));
    io.out(
      rows.map((p) => `${p.id}  ${p.project_id}  ${p.rail.padEnd(13)} ${formatUsdc(p.amount_micros)} USD to ${p.recipient}  until ${p.approval_until}`).join("\n") || "No payments wait for approval.",
      rows.map((p) => ({ id: p.id, project_id: p.project_id, token_id: p.token_id, rail: p.rail, amount_usd: Number(formatUsdc(p.amount_micros)), recipient: p.recipient, created_at: p.created_at, approval_until: p.approval_until })),
    );
    return 0;
  },

  "payments approve": async (input) => decide(input, "approved"),
  "payments deny": async (input) => decide(input, "denied"),

  "refusals list": async ({ config, options, io }) => {
    const projectId = typeof options.project === "string" ? options.project : undefined;
    const limit = Math.min(1_000, Math.max(1, Number(options.limit ?? 50) || 50));
    const rows = await withLedger(config, (l) => l.listRefusals({ projectId, limit }));
    io.out(rows.map((r) => `${r.created_at}  ${r.token_id ?? "-"}  ${r.code}  ${r.rail} ${r.recipient}\n    ${r.detail}`).join("\n") || "No refusals.", rows);
    return 0;
  },
};

async function decide({ config, args, io }: CommandInput, decision: "approved" | "denied"): Promise<number> {
  const id = args[0];
  if (!id) throw new CliError(`usage: agentwallet payments ${decision === "approved" ? "approve" : "deny"} PAYMENT_ID`);
  const out = await withLedger(config, (l) => decidePayment({ ledger: l, clock: systemClock }, id, decision, "cli"));
  if (out.kind === "not_awaiting") throw new CliError(`payment ${id} is not waiting for approval (${out.detail})`);
  io.out(
    decision === "approved" ? `Approved ${id}: the running server's worker sends it now.` : `Denied ${id}: failed and credited back.`,
    { id, decision, status: out.payment.status },
  );
  return 0;
}
