/** Amounts as a person reads them: US dollars, integers in, no float arithmetic on money. */

/** micro-USDC (1 USDC = 1 USD = 1,000,000) → "1,234.56" (two to six decimals, as the amount needs). */
export function formatMicros(micros: number): string {
  const neg = micros < 0;
  const abs = Math.abs(micros);
  const whole = Math.floor(abs / 1_000_000);
  let frac = String(abs % 1_000_000).padStart(6, "0").replace(/0+$/, "");
  if (frac.length < 2) frac = frac.padEnd(2, "0");
  return `${neg ? "−" : ""}${whole.toLocaleString("en-US")}.${frac}`;
}

/** cents → "1,234.56". */
export function formatCents(cents: number): string {
  const neg = cents < 0;
  const abs = Math.abs(cents);
  return `${neg ? "−" : ""}${Math.floor(abs / 100).toLocaleString("en-US")}.${String(abs % 100).padStart(2, "0")}`;
}

/** A transaction's amount in its currency's unit (`usdc`: micro-USDC, `usd`: cents) as "$1.23". */
export function formatAmount(amount: number, currency: string): string {
  return `$${currency === "usd" ? formatCents(amount) : formatMicros(amount)}`;
}

/** "2026-11-24T16:30:00.000Z" → "2026-11-24 16:30:00 UTC". */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return "";
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
}
