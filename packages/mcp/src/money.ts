/**
 * USD amounts at the edge of the tool server. Guards compare integers in micro-USD (1 USD = 1,000,000,
 * the same scale as micro-USDC), parsed from decimal text exactly, so a float never decides whether a
 * payment passes a cap.
 */
import { MICROS_PER_CENT, MICROS_PER_USDC } from "@agentwallet/api";

const decimalPattern = /^(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;
/** Longer text is not an amount anyone means; bounding it bounds the BigInt work below. */
const decimalTextMaxChars = 64;

/**
 * A non-negative decimal (`"2.5"`, `2.5`, `1e-7`) in micro-USD, rounding a fraction of a micro up: a guard
 * must never judge an amount smaller than it is. Returns undefined for anything that is not such a number.
 */
export function usdToMicrosCeil(value: number | string): number | undefined {
  const text = typeof value === "number" ? (Number.isFinite(value) ? String(value) : "") : value.trim();
  if (text.length > decimalTextMaxChars) return undefined;
  const match = decimalPattern.exec(text);
  if (!match) return undefined;
  const [, whole = "", fraction = "", exponentText = "0"] = match;
  // value = digits × 10^shift micro-USD
  const digits = BigInt(whole + fraction);
  const shift = Number(exponentText) - fraction.length + 6;
  let micros: bigint;
  if (shift >= 0) {
    micros = digits * 10n ** BigInt(shift);
  } else {
    const divisor = 10n ** BigInt(-shift);
    micros = digits / divisor + (digits % divisor === 0n ? 0n : 1n);
  }
  return micros > BigInt(Number.MAX_SAFE_INTEGER) ? Number.POSITIVE_INFINITY : Number(micros);
}

export const centsToMicros = (amountCents: number): number => amountCents * MICROS_PER_CENT;

/** `1234500` → `"$1.2345"`, `5000000` → `"$5.00"`: at least two decimals, no trailing zeros beyond them. */
export function formatUsd(micros: number): string {
  const whole = Math.floor(micros / MICROS_PER_USDC);
  const fraction = String(micros % MICROS_PER_USDC)
    .padStart(6, "0")
    .replace(/0+$/, "")
    .padEnd(2, "0");
  return `$${whole}.${fraction}`;
}
