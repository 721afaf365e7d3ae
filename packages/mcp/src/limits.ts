/**
 * The token's spending limits as the model reads them in the `pay` tool's description: read once from
 * `GET /v1/limits` when the server starts (each HTTP session starts one), so the model plans within them
 * instead of meeting a 403. What remains changes with every payment; `get_spending_limits` reads it now.
 */
import { type Limits, WalletApiError, type WalletClient } from "@agentwallet/api";

/** Start-up waits at most this long for the limits; the description says so when they did not come. */
export const limitsReadTimeoutMs = 3_000;

const intervalWords: Record<string, string> = {
  per_payment: "per payment",
  daily: "per UTC day",
  weekly: "per week (from Monday, UTC)",
  monthly: "per calendar month (UTC)",
  all_time: "in total",
};

/** `10.5` → `"$10.50"`. */
const usd = (amount: number) => `$${amount.toFixed(Math.max(2, (String(amount).split(".")[1] ?? "").length))}`;

function describeControls(c: NonNullable<Limits["token"]>): string[] {
  const parts = c.spending_limits.map((l) => `at most ${usd(l.amount_usd)} ${intervalWords[l.interval] ?? l.interval}`);
  if (c.allowed_recipients) parts.push(c.allowed_recipients.length ? `only to ${c.allowed_recipients.join(", ")}` : "to nobody (empty allow-list)");
  if (c.blocked_recipients.length) parts.push(`never to ${c.blocked_recipients.join(", ")}`);
  if (c.allowed_rails) parts.push(`only by ${c.allowed_rails.join(", ")}`);
  if (c.approval_above_usd !== null) {
    parts.push(`USDC and bank payments above ${usd(c.approval_above_usd)} wait as pending for a person's approval, and x402 payments above it are refused`);
  }
  return parts;
}

/** The sentence the `pay` tool's description ends with. */
export function describeLimits(limits: Limits): string {
  const token = limits.token ? describeControls(limits.token) : [];
  const project = limits.project ? describeControls(limits.project) : [];
  if (token.length === 0 && project.length === 0) {
    return "Spending limits: none on this token or its project (read at start); only the balance bounds payments.";
  }
  const said = [token.length ? `this token pays ${token.join("; ")}` : "", project.length ? `its project (every token) pays ${project.join("; ")}` : ""].filter(Boolean);
  return `Spending limits (read at start; get_spending_limits shows what remains now): ${said.join(". Also, ")}. A payment outside them is refused with a message naming the rule.`;
}

/** `promise`, or a rejection after `ms`: what start-up waits for an answer from the API. */
export function withinMs<T>(promise: Promise<T>, ms: number): Promise<T> {
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms).unref());
  return Promise.race([promise, timeout]);
}

/** Reads the limits for the description; never throws (a server must start even when they cannot be read). */
export async function readLimitsNote(client: WalletClient): Promise<string> {
  try {
    return describeLimits((await withinMs(client.getLimits(), limitsReadTimeoutMs)).data);
  } catch (error) {
    const why =
      error instanceof WalletApiError ? `HTTP ${error.status}: ${error.detail.slice(0, 200)}`
      : error instanceof TypeError ? "the Agent Wallet API was not reachable"
      : error instanceof Error ? error.message.split("\n")[0]!.slice(0, 200)
      : "unknown error";
    return `Spending limits: could not be read at start (${why}); call get_spending_limits before a large payment.`;
  }
}
