/**
 * A rail's word that no retry of a step can succeed (the wallet is frozen, the provider refused the
 * account): the settlement's retry rule (settlement/settlementRetry.ts) fails the payment with `code`
 * if nothing was sent. Declared here, by the rails that throw it, so they need nothing from above.
 */
import type { FailureCode } from "../ledger/failureCodes.ts";

export class PermanentFailure extends Error {
  override name = "PermanentFailure";
  constructor(
    readonly code: FailureCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}
