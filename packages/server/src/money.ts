/**
 * Money at the edge: exact decimal parsing of `amount_usd`, fees, and formatting. Inside the
 * service money is an integer in the smallest unit; nothing on the path of money is a float.
 */
import { MICROS_PER_CENT } from "@agentwallet/api";
import type { Plan } from "./domain/project.ts";

/** Fee rates in basis points (1 bp = 0.01%). */
export const PLAN_FEE_BPS: Record<Plan, number> = { free: 200, pro: 150, business: 100 };

export type ParsedAmount = { ok: true; units: number } | { ok: false; reason: string };

/**
 * Converts a JSON number of dollars to integer units with `decimals` places (2: cents, 6: micros),
 * exactly. A JS number prints as the shortest text that round-trips, so `String(0.29)` is "0.29":
 * we parse that text, never multiply the float. More decimals than the unit allows is refused
 * rather than rounded: rounding someone's money is a decision for them to make.
 */
export function parseDecimalAmount(value: number, decimals: number): ParsedAmount {
  if (typeof value !== "number" || !Number.isFinite(value)) return { ok: false, reason: "must be a finite number" };
  if (value <= 0) return { ok: false, reason: "must be greater than 0" };
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$/i.exec(String(value));
  if (!m) return { ok: false, reason: "must be a plain decimal number" };
  const exponent = Number(m[3] ?? "0");
  let digits = (m[1] ?? "") + (m[2] ?? "");
  let scale = (m[2] ?? "").length - exponent; // value = digits × 10^-scale
  digits = digits.replace(/^0+(?=\d)/, "");
  // Trailing zeros carry no precision: 1.50 has 1 decimal.
  while (scale > 0 && digits.endsWith("0") && digits.length > 1) {
    digits = digits.slice(0, -1);
    scale--;
  }
  if (scale > decimals) return { ok: false, reason: `has more than ${decimals} decimal places` };
  const units = BigInt(digits) * 10n ** BigInt(decimals - scale);
  if (units > BigInt(Number.MAX_SAFE_INTEGER)) return { ok: false, reason: "is too large" };
  return { ok: true, units: Number(units) };
}

/** Fee = ceil(amount × rate), at least 1 unit when the rate is non-zero. Integer maths only. */
export function feeFor(amountUnits: number, plan: Plan): number {
  const bps = BigInt(PLAN_FEE_BPS[plan]);
  if (bps === 0n) return 0;
  const fee = (BigInt(amountUnits) * bps + 9_999n) / 10_000n;
  return Number(fee > 0n ? fee : 1n);
}

export function centsToMicros(cents: number): number {
  return cents * MICROS_PER_CENT;
}

/** "1.200000" for 1_200_000 micros: for messages, never for arithmetic. */
export function formatUsdc(micros: number): string {
  const sign = micros < 0 ? "-" : "";
  const abs = BigInt(Math.abs(micros));
  return `${sign}${abs / 1_000_000n}.${(abs % 1_000_000n).toString().padStart(6, "0")}`;
}

/** Micro-USDC as a USDC number for the deprecated endpoint's `amount_usdc`/`fee_usdc` fields. */
export function microsToUsdcNumber(micros: number): number {
  return Number(formatUsdc(micros));
}
