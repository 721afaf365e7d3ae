/**
 * Every bound of the wire contract, named once. Values come from the spec's Limits table; where the
 * spec is silent the choice is ours and recorded in docs/decisions.md.
 */
export const limits = {
  /** `GET /v1/transactions` page size. */
  pageLimitMin: 1,
  pageLimitMax: 200,
  pageLimitDefault: 50,
  /** Deep offsets grow linearly in cost; bounded so one request cannot scan the whole table. */
  pageOffsetMax: 10_000_000,
  descriptionMaxChars: 500,
  idempotencyKeyMaxChars: 255,
  urlMaxChars: 2048,
  /** `POST /v1/pay` USDC rail, same bound as `POST /v1/usdc/transfer`. */
  usdcTransferMaxUsd: 100_000,
  /** `POST /v1/pay` fiat rail: 1,000,000 USD = 100,000,000 cents, the bound of `POST /v1/payments`. */
  fiatPaymentMaxUsd: 1_000_000,
  paymentAmountCentsMin: 1,
  paymentAmountCentsMax: 100_000_000,
  /** x402 price cap in micro-USDC (100 USDC). */
  x402MaxAmountMicrosMin: 1,
  x402MaxAmountMicrosMax: 100_000_000,
  proxiedHeadersMaxCount: 50,
  proxiedHeaderValueMaxChars: 8192,
  proxiedBodyMaxChars: 1_000_000,
  bankNameMaxChars: 200,
  bankAccountNumberMinChars: 4,
  bankAccountNumberMaxChars: 34,
  bankEmailMaxChars: 254,
  rateLimitPerMinute: 100,
  /** `metadata` on payments: the caller's own tags, stored and shown, never interpreted. */
  metadataKeysMax: 20,
  metadataKeyMaxChars: 40,
  metadataValueMaxChars: 500,
  /**
   * `GET /v1/transactions` with a filter or a cursor: `offset` is at most this. Each page is read by
   * index ranges of at most offset + limit rows per (type, status) pair; deeper pages use `starting_after`.
   */
  filteredOffsetMax: 1_000,
  /** `type` and `status` filters: at most this many values each (there are 7 types and 5 statuses). */
  filterValuesMax: 10,
  /** Spending controls: at most this many recipients per list, amounts up to this many USD. */
  controlsRecipientsMax: 100,
  controlsAmountUsdMax: 1_000_000_000,
  /** Admin API lists: pending approvals and refusals per page. */
  adminPendingMax: 200,
  adminRefusalsMax: 1_000,
  adminRefusalsDefault: 50,
  /** The audit log, per page (newest first, paged by `before`). */
  adminAuditMax: 500,
  adminAuditDefault: 50,
  /** A reason given with an approval or a denial. */
  decisionReasonMaxChars: 500,
  /** Names of projects and admin credentials. */
  projectNameMaxChars: 200,
  /** How long a `POST /v1/quote` id may be paid with (five minutes: x402's default offer validity). */
  quoteValiditySeconds: 300,
  /** A token's lifetime from the admin API: up to ten years. */
  tokenExpiresInSecondsMax: 3650 * 86_400,
  /** A token's name. */
  tokenNameMaxChars: 100,
} as const;

/** 1 USDC = 1,000,000 micro-USDC; 1 cent = 10,000 micro-USDC. */
export const MICROS_PER_USDC = 1_000_000;
export const MICROS_PER_CENT = 10_000;
