/**
 * What a bank payment keeps in `rail_state`, stage by stage (each persisted before the next external call).
 * `deposit_first` (the sandbox off-ramp): held → usdc_leg → payout → fee_sweep.
 * `payout_first` (Bridge): held → payout_created → usdc_leg → payout → fee_sweep.
 * - `held`: amount + fee debited, nothing sent or asked for (stored as no state at all);
 * - `payout_created`: the provider's transfer exists (`provider_ref`) and named the `deposit` to send, exactly
 *   the amount held; nothing is signed yet;
 * - `usdc_leg`: the amount's authorization to the off-ramp is relayed (`tx_hash`), with its relayer nonce;
 * - `payout`: the USDC reached the off-ramp and the payout is the provider's (`provider_ref`); `paidOut` once
 *   it was seen paid out (`payout_first`: a refund read later is then a return, never a failure);
 * - `fee_sweep`: paid out, so the fee is earned: its relayed transfer to the treasury (`feeSweep`, absent
 *   again after one that can no longer be mined: a fresh one is signed).
 * The payment completes once the sweep is confirmed (or at once with no fee). From `payout` on, `reported`
 * lists each state the provider reported, with when.
 */
import { z } from "zod";
import { type Transitions, addressSchema, authorizationSchema, feeSweepSchema, railStateCodec, transferLogsSchema } from "../railState.ts";

const deposit = z.object({ address: addressSchema, amountMicros: z.number().int().nonnegative() });
/**
 * The amount's relayed leg to the off-ramp (and, `payout_first`, the deposit it was sent to); from `payout` on,
 * where its transfer's USDC `Transfer` log is (`logs`, the payment's evidence).
 */
const leg = { deposit: deposit.optional(), transfers: z.array(authorizationSchema), relayNonce: z.number().int().nonnegative(), logs: transferLogsSchema.optional() };

/**
 * Each state the provider reported for the payout while the payment was open, in order, with when (the
 * provider's time when it gives one, else ours): the payment's evidence. The newest REPORTED_MAX are kept.
 */
const reported = z.array(z.object({ status: z.string(), at: z.string() })).optional();
export const REPORTED_MAX = 20;

export const fiatStateSchema = z.discriminatedUnion("stage", [
  z.object({ stage: z.literal("held") }),
  z.object({ stage: z.literal("payout_created"), deposit }),
  z.object({ stage: z.literal("usdc_leg"), ...leg }),
  z.object({ stage: z.literal("payout"), ...leg, paidOut: z.literal(true).optional(), reported }),
  z.object({ stage: z.literal("fee_sweep"), ...leg, paidOut: z.literal(true).optional(), feeSweep: feeSweepSchema.optional(), reported }),
]);
export type FiatState = z.infer<typeof fiatStateSchema>;
/** The stages after the USDC reached the off-ramp: the payout is the provider's. */
export type FiatPaidOutState = Extract<FiatState, { stage: "payout" | "fee_sweep" }>;

/** The stage changes the rail writes (docs/architecture.md, "Rail stages"). */
export const FIAT_TRANSITIONS = {
  held: ["usdc_leg", "payout_created"],
  payout_created: ["usdc_leg"],
  usdc_leg: ["usdc_leg", "payout"],
  payout: ["payout", "fee_sweep"],
  fee_sweep: ["fee_sweep"],
} as const satisfies Transitions<FiatState["stage"]>;

export const fiatStates = railStateCodec<FiatState>("fiat", fiatStateSchema, FIAT_TRANSITIONS, (json) => (json === null ? { stage: "held" } : json));

/** Whether the payout was seen paid out before: then a refund is a return after completion. */
export function seenPaidOut(state: FiatPaidOutState): boolean {
  return state.paidOut === true || (state.stage === "fee_sweep" && state.feeSweep !== undefined);
}
