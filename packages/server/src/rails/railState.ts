/**
 * What every rail's state codec shares. A payment's `rail_state` column is JSON written and read only
 * through its rail's codec (usdc/usdcState.ts, fiat/fiatState.ts, x402/x402State.ts): a zod schema of a
 * discriminated union of the rail's stages, and a table of the stage changes the rail may write. Reading a
 * row that does not parse throws `CorruptRailState` naming the payment, never a default; writing a change
 * the table does not list is a broken invariant and throws too.
 */
import { type Address, type Hex, isAddress, isHex } from "viem";
import { z } from "zod";
import type { Payment } from "../domain/payment.ts";
import type { Authorization } from "./eip3009.ts";

/**
 * A payment's stored rail state that its rail cannot read. Nothing about the payment is guessed from it:
 * settlement logs it with the payment's id and leaves the payment as it is for an operator
 * (settlement/settlementRetry.ts; decisions.md, "A rail state that does not parse").
 */
export class CorruptRailState extends Error {
  override name = "CorruptRailState";
  constructor(
    readonly paymentId: string,
    readonly rail: string,
    detail: string,
  ) {
    super(`payment ${paymentId}: its ${rail} rail_state does not parse (${detail}); the payment is left as it is for an operator`);
  }
}

/** Each stage and the stages a rail may write after it (a stage may list itself: its fields change). */
export type Transitions<Stage extends string> = { readonly [S in Stage]: readonly Stage[] };

export const addressSchema = z.custom<Address>((v) => typeof v === "string" && isAddress(v, { strict: false }), "an address");
export const hexSchema = z.custom<Hex>((v) => typeof v === "string" && isHex(v), "hex");

/** An EIP-3009 authorization as stored (uint256 fields as decimal text). */
export const authorizationSchema = z.object({
  from: addressSchema,
  to: addressSchema,
  value: z.string(),
  validAfter: z.string(),
  validBefore: z.string(),
  nonce: hexSchema,
  signature: hexSchema,
}) satisfies z.ZodType<Authorization>;

/**
 * Where each transfer of a confirmed relayed leg is on-chain (its USDC `Transfer` log's block and index), in
 * the order of its authorizations; null for one moved by another submission of ours than the stored one.
 * Kept for the payment's evidence, which verify-evidence checks against the chain.
 */
export const transferLogsSchema = z.array(z.object({ blockNumber: z.number().int().nonnegative(), logIndex: z.number().int().nonnegative() }).nullable());

/** A relayed transfer of the fee to the treasury, once signed (onchainLeg.ts `relayTransfers`). */
export const feeSweepSchema = z.object({ hash: hexSchema, transfers: z.array(authorizationSchema) });
export type FeeSweep = z.infer<typeof feeSweepSchema>;

export type RailStateCodec<S extends { stage: string }> = {
  /** The payment's state; throws `CorruptRailState` (naming the payment) when its stored state does not parse. */
  read(p: Pick<Payment, "id" | "railState">): S;
  /** `next` as stored, after `from`; throws when the rail's table does not list that change. */
  write(from: S["stage"], next: S): string;
  transitions: Transitions<S["stage"]>;
};

/**
 * A codec over `schema`. `fromStored` turns the stored JSON (`null` for a payment held with no state) into
 * what `schema` reads: where older rows lack what the union now names (a stage), it is added there, so
 * every row ever written still reads.
 */
export function railStateCodec<S extends { stage: string }>(
  rail: string,
  schema: z.ZodType<S>,
  transitions: Transitions<S["stage"]>,
  fromStored: (json: unknown) => unknown = (json) => json,
  toStored: (state: S) => unknown = (state) => state,
): RailStateCodec<S> {
  return {
    transitions,
    read(p) {
      let json: unknown = null;
      if (p.railState !== null) {
        try {
          json = JSON.parse(p.railState);
        } catch (err) {
          throw new CorruptRailState(p.id, rail, `not JSON: ${(err as Error).message}`);
        }
      }
      const parsed = schema.safeParse(fromStored(json));
      if (!parsed.success) throw new CorruptRailState(p.id, rail, z.prettifyError(parsed.error).replaceAll("\n", " ").slice(0, 300));
      return parsed.data;
    },
    write(from, next) {
      // Invariant: a rail writes only the changes its table lists (docs/architecture.md shows each table).
      if (!transitions[from].includes(next.stage)) throw new Error(`${rail} rail state may not go from ${from} to ${next.stage}`);
      return JSON.stringify(toStored(next));
    },
  };
}
