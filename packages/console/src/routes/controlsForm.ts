/** The spending controls a token form sends, read into the port's `Controls`; a mistake the person can correct is a 400 saying what to write. */
import type { Controls } from "../backend.ts";
import { INTERVALS, RAILS } from "../pages.ts";
import { ConsoleError } from "./kit.ts";

export /** The controls a form names: every field given (an edit replaces the token's controls as a whole). */
function controlsFromForm(body: Record<string, string>): Controls {
  const usd = (name: string, label: string): number | null => {
    const text = (body[name] ?? "").trim().replace(/^\$/, "").replace(/,/g, "");
    if (!text) return null;
    if (!/^\d{1,10}(\.\d{1,6})?$/.test(text)) throw new ConsoleError(400, `${label}: write an amount in US dollars such as 10 or 2.50, or leave it empty.`);
    return Number(text);
  };
  const lines = (name: string) => (body[name] ?? "").split(/[\r\n,]+/).map((l) => l.trim()).filter(Boolean);
  const spending_limits: Controls["spending_limits"] = [];
  for (const interval of INTERVALS) {
    const amount = usd(`limit_${interval}`, `${interval.replace("_", " ")} limit`);
    if (amount !== null) spending_limits.push({ interval, amount_usd: amount });
  }
  const rails = RAILS.filter((r) => body[`rail_${r}`] !== undefined);
  if (rails.length === 0) throw new ConsoleError(400, "Tick at least one rail the token may pay on (to stop it paying, revoke it).");
  const allowed = lines("allowed_recipients");
  const controls: Controls = {
    spending_limits,
    allowed_recipients: allowed.length ? allowed : null,
    blocked_recipients: lines("blocked_recipients"),
    allowed_rails: rails.length === RAILS.length ? null : rails,
    approval_above_usd: usd("approval_above_usd", "Approval above"),
  };
  return controls;
}

/**

 * stored (a bank account is shown masked and could not be read back from the page).
 */
export function changedControlsFromForm(body: Record<string, string>): Partial<Controls> {
  const c: Partial<Controls> = controlsFromForm(body);
  const same = (name: string) => {
    const norm = (text: string | undefined) => (text ?? "").split(/[\r\n,]+/).map((l) => l.trim()).filter(Boolean).join("\n");
    return body[`shown_${name}`] !== undefined && norm(body[name]) === norm(body[`shown_${name}`]);
  };
  if (same("allowed_recipients")) delete c.allowed_recipients;
  if (same("blocked_recipients")) delete c.blocked_recipients;
  return c;
}
