/**
 * A payment as every layer above the ledger sees it: camelCase, its amounts branded integers, its
 * status and rail the wire's unions. The ledger maps its row to this once (`toPayment`, ledger/paymentRows.ts);
 * nothing above `ledger/` reads the row.
 */
import type { Currency, PaymentStatus, Rail } from "@agentwallet/api";

/** An amount in micro-USDC (10⁻⁶ USDC), an integer; made only by the ledger's mapping of its row (`toPayment`). */
export type Micros = number & { readonly __brand: "Micros" };
/** An amount in the rail's own unit: micro-USDC on-chain, cents for fiat; an integer. */
export type RailUnits = number & { readonly __brand: "RailUnits" };

/** A payment above a token's approval threshold: waiting for a person, or how it was decided. */
export type Approval = "awaiting" | "approved" | "denied" | "expired";

/** Why an open payment is not moving, when the service knows (`waiting.code` in GET /v1/transactions/{id}; docs/errors.md). */
export const WAITING_CODES = ["relayer_unfunded"] as const;
export type WaitingCode = (typeof WAITING_CODES)[number];

export type Payment = {
  /** = the id of the rail transaction. */
  id: string;
  projectId: string;
  rail: Rail;
  status: PaymentStatus;
  /** Rail-native: micro-USDC, or cents for fiat. */
  amountUnits: RailUnits;
  feeUnits: RailUnits;
  amountMicros: Micros;
  feeMicros: Micros;
  currency: Currency;
  /** URL, address, or bank recipient name. */
  recipient: string;
  /** Fiat: the bank details, as stored (the account number sealed). */
  recipientJson: string | null;
  description: string | null;
  idempotencyKey: string | null;
  feeTxnId: string;
  txHash: string | null;
  providerRef: string | null;
  estimatedArrival: string | null;
  /** x402: the target's reply, as JSON. */
  responseJson: string | null;
  /** JSON: authorizations, nonces, signed relayer transactions, deadlines (rails/railState.ts reads it). */
  railState: string | null;
  /** Failed or reversed: the human message. */
  failureReason: string | null;
  /** Failed or reversed: a FailureCode (ledger/failureCodes.ts), stable for programs. */
  failureCode: string | null;
  /** Steps of this payment that failed (settlement/settlementRetry.ts). */
  stepErrors: number;
  /** The creating request is still running until then (409 for repeats). */
  inFlightUntil: string | null;
  leaseOwner: string | null;
  leaseUntil: string | null;
  nextAttemptAt: string;
  attempts: number;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  /** JSON object of the caller's string tags, or null. */
  metadata: string | null;
  /** The token that made the payment; null before spending controls existed. */
  tokenId: string | null;
  /** JSON [[scope id, window kind, window start], …]: the window counters this payment's amount was added to. */
  spendWindows: string | null;
  approval: Approval | null;
  /** Until when an awaiting payment may be approved. */
  approvalUntil: string | null;
  /** Who approved or denied it; null if nobody did. */
  approvalDecidedBy: string | null;
  approvalDecidedAt: string | null;
  /** The decider's name when they decided (a credential's name, a token's prefix, the CLI's user). */
  approvalDecidedByName: string | null;
  /** The reason the decider gave, if any. */
  approvalReason: string | null;
  /** Fiat, completed: when the return watch last read its payout directly. */
  returnCheckedAt: string | null;
  /** Fiat: the on-chain transaction by which the provider sent its USDC back. */
  refundTxHash: string | null;
};

/** What progress of an open payment may change (`ledger.payments.updatePayment`, and the relayer's stored step). */
export type PaymentPatch = Partial<
  Pick<Payment, "status" | "txHash" | "providerRef" | "estimatedArrival" | "responseJson" | "railState" | "nextAttemptAt" | "inFlightUntil" | "leaseOwner" | "leaseUntil" | "attempts" | "failureReason" | "failureCode" | "stepErrors" | "recipientJson">
>;
