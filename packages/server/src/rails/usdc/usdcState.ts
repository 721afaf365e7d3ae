/**
 * What a usdc_transfer payment keeps in `rail_state`, stage by stage (each persisted before the next
 * external call):
 * - `held`: amount + fee debited, nothing signed (stored as no state at all);
 * - `relayed`: the authorizations (amount → recipient, fee → treasury) and the relayer transaction's nonce
 *   are stored with the payment's `tx_hash`; the chain decides it from here (completed or failed).
 * A relayed leg sent again (the node lost it, or the chain lost it after completion) stays `relayed` with
 * its new authorizations and nonce. Once confirmed, it stays `relayed` with `logs`: where each transfer's
 * USDC `Transfer` log is (the payment's evidence), written before the payment completes.
 */
import { z } from "zod";
import { type Transitions, authorizationSchema, railStateCodec, transferLogsSchema } from "../railState.ts";

export const usdcStateSchema = z.discriminatedUnion("stage", [
  z.object({ stage: z.literal("held") }),
  z.object({ stage: z.literal("relayed"), transfers: z.array(authorizationSchema), relayNonce: z.number().int().nonnegative(), logs: transferLogsSchema.optional() }),
]);
export type UsdcState = z.infer<typeof usdcStateSchema>;

/** The stage changes the rail writes (docs/architecture.md, "Rail stages"). */
export const USDC_TRANSITIONS = {
  held: ["relayed"],
  relayed: ["relayed"],
} as const satisfies Transitions<UsdcState["stage"]>;

export const usdcStates = railStateCodec<UsdcState>("usdc_transfer", usdcStateSchema, USDC_TRANSITIONS, (json) => {
  if (json === null) return { stage: "held" };
  // Rows written before the stage was stored: a relayed leg is all they can hold.
  if (typeof json === "object" && !("stage" in json)) return { ...json, stage: "relayed" };
  return json;
});
