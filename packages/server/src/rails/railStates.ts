/** Each rail's state codec by the rail's name, for code that reads a payment of any rail. */
import type { Payment } from "../domain/payment.ts";
import { fiatStates } from "./fiat/fiatState.ts";
import { usdcStates } from "./usdc/usdcState.ts";
import { x402States } from "./x402/x402State.ts";

const CODECS = { usdc_transfer: usdcStates, fiat: fiatStates, x402: x402States } as const;

/**
 * Whether the payment's stored rail state parses: `undefined` if it does, else the `CorruptRailState`
 * message naming the payment (a rail without a codec says so too).
 */
export function railStateProblem(p: Pick<Payment, "id" | "rail" | "railState">): string | undefined {
  const codec = (CODECS as Record<string, { read(p: Pick<Payment, "id" | "railState">): unknown } | undefined>)[p.rail];
  if (!codec) return `payment ${p.id}: rail ${p.rail} has no state codec`;
  try {
    codec.read(p);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/**
 * Whether the payment waits for a transaction of the service's relayer: an open USDC transfer, or an open bank
 * payment whose USDC has not reached the off-ramp yet. (x402 settlements are the merchant's facilitator's.)
 */
export function waitsOnRelayer(p: Pick<Payment, "id" | "rail" | "railState" | "status">): boolean {
  if (p.status !== "processing") return false;
  if (p.rail === "usdc_transfer") return true;
  if (p.rail !== "fiat") return false;
  const stage = fiatStates.read(p).stage;
  return stage === "held" || stage === "payout_created" || stage === "usdc_leg";
}
