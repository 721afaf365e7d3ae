/**
 * What an x402 (or MPP) payment keeps in `rail_state`, stage by stage. Each stage is persisted before the next
 * external call, so a worker resuming after any crash knows exactly what may have left the process:
 * - `held`: amount + fee debited, nothing signed yet;
 * - `signed`: the authorization (with its fresh random nonce) is stored; the merchant may hold it;
 * - `settled`: the authorization was used on-chain by `settlement.txHash`; the fee sweep follows.
 */
import { z } from "zod";
import { type Transitions, addressSchema, authorizationSchema, feeSweepSchema, hexSchema, railStateCodec } from "../railState.ts";
import type { SignedAuthorization } from "./signPayment.ts";
import type { Payment } from "../../domain/payment.ts";

/** The authorization as signed for the merchant (the signature travels in the payment header only). */
const signedAuthorization = authorizationSchema.omit({ signature: true }) satisfies z.ZodType<SignedAuthorization>;

/**
 * The requirement judged and held for. An MPP payment (the target's 402 offered a Payment challenge and no
 * x402 requirement: mppChallenge.ts) has `protocol: "mpp"` and the challenge it answers, and no x402 version;
 * everything after the signature (the authorization's use on-chain, the fee sweep) is the same.
 */
const quoted = {
  protocol: z.literal("mpp").optional(),
  x402Version: z.union([z.literal(1), z.literal(2)]).optional(),
  /** The MPP challenge answered: its id and realm, and the challenge itself as mppx serializes it (the evidence). */
  mpp: z.object({ challengeId: z.string(), realm: z.string(), challenge: z.string().optional() }).optional(),
  network: z.string(),
  payTo: addressSchema,
  maxTimeoutSeconds: z.number(),
  /** The target's 402 as received and decoded (requirements, extensions: a signed offer), for the payment's evidence. */
  paymentRequired: z.unknown().optional(),
};
const signed = {
  ...quoted,
  authorization: signedAuthorization,
  /** A block read before signing: the settlement cannot be earlier, so the log search starts here. */
  fromBlock: z.number().int().nonnegative().optional(),
  /**
   * The exact payment header, stored before it leaves: the evidence of what was sent, and what is sent again,
   * byte for byte, when the outcome of sending it is unknown (never a new signature).
   */
  sent: z.object({ name: z.string(), value: z.string() }).optional(),
  /** The x402 payment-identifier sent in the payload, when the merchant declared the extension. */
  paymentIdentifier: z.string().optional(),
  /** The paid request's method, kept with a payment-identifier: the worker sends the stored payload again with it. */
  method: z.enum(["GET", "POST", "PUT", "DELETE"]).optional(),
  /**
   * How many times the worker sent the stored payload again (advanceX402Payment.ts), counted before each send
   * so a restart never sends more than the bound; and the status of the last answer, when one came.
   */
  workerResends: z.object({ count: z.number().int().nonnegative(), lastStatus: z.number().int().nullable() }).optional(),
};

export const x402StateSchema = z.discriminatedUnion("stage", [
  z.object({ stage: z.literal("held"), ...quoted }),
  z.object({ stage: z.literal("signed"), ...signed }),
  z.object({
    stage: z.literal("settled"),
    ...signed,
    /** The transaction that used the authorization, and who told us. */
    settlement: z.object({
      txHash: hexSchema,
      source: z.enum(["receipt", "chain"]),
      /** The merchant's `PAYMENT-RESPONSE` (`X-PAYMENT-RESPONSE`) as received: its settle response and any signed receipt. */
      response: z.string().optional(),
      /** MPP: the merchant's `Payment-Receipt` as received (its reference is the settlement's transaction). */
      receipt: z.string().optional(),
      /** Where the USDC `Transfer` of the settlement is: read from the receipt that proved it. */
      log: z.object({ blockNumber: z.number().int().nonnegative(), logIndex: z.number().int().nonnegative() }).optional(),
    }),
    /**
     * The chain lost the settlement after the payment completed (a rollback deeper than the confirmation
     * depth) and the authorization expired unused: the same transfer to `payTo`, signed again and relayed
     * by us (settlement/lostLegs.ts). The payment's `tx_hash` is then this transaction's.
     */
    resent: z.object({ lostTxHash: hexSchema.nullable(), transfers: z.array(authorizationSchema), relayNonce: z.number().int().nonnegative() }).optional(),
    /** The relayed fee transfer to the treasury, once signed (see onchainLeg.ts). */
    feeSweep: feeSweepSchema.optional(),
  }),
]);
export type X402State = z.infer<typeof x402StateSchema>;
export type X402HeldState = Extract<X402State, { stage: "held" }>;
export type X402SignedState = Extract<X402State, { stage: "signed" }>;
export type X402SettledState = Extract<X402State, { stage: "settled" }>;

/** The stage changes written for an x402 payment (docs/architecture.md, "Rail stages"). */
export const X402_TRANSITIONS = {
  held: ["signed"],
  // A signed payment stays signed while the worker sends its payload again (`workerResends`).
  signed: ["signed", "settled"],
  settled: ["settled"],
} as const satisfies Transitions<X402State["stage"]>;

/** An x402 payment is always held with its state: none stored does not parse. */
export const x402States = railStateCodec<X402State>("x402", x402StateSchema, X402_TRANSITIONS);

/** Whether the payment was paid by MPP (read without throwing: rendering never fails on a payment's state). */
export function paidByMpp(p: Pick<Payment, "rail" | "railState">): boolean {
  if (p.rail !== "x402" || !p.railState) return false;
  try {
    return (JSON.parse(p.railState) as { protocol?: unknown }).protocol === "mpp";
  } catch {
    return false;
  }
}
