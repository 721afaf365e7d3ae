/**
 * The wire contract of `spec/wallet-api.md` as zod schemas: one schema per request and response.
 * The server validates with these, the OpenAPI document is generated from them, the MCP tools
 * reuse them, and the typed client returns their inferred types.
 */
import { z } from "zod";
import { limits } from "./limits.ts";

export const idempotencyKeyPattern = /^[A-Za-z0-9_\-:.]+$/;
export const evmAddressPattern = /^0x[0-9a-fA-F]{40}$/;
export const routingNumberPattern = /^[0-9]{9}$/;

/** The ABA check: 3·(d1+d4+d7) + 7·(d2+d5+d8) + (d3+d6+d9) is a multiple of 10 (a mistyped digit fails it). */
export function abaChecksumValid(routingNumber: string): boolean {
  if (!routingNumberPattern.test(routingNumber)) return false;
  const d = [...routingNumber].map(Number);
  const sum = 3 * (d[0]! + d[3]! + d[6]!) + 7 * (d[1]! + d[4]! + d[7]!) + (d[2]! + d[5]! + d[8]!);
  return sum % 10 === 0;
}

export const TransactionType = z.enum([
  "fund",
  "payment",
  "x402_payment",
  "usdc_transfer",
  "usdc_fund",
  "platform_fee",
  "fiat_withdrawal",
]);
export type TransactionType = z.infer<typeof TransactionType>;

export const TransactionStatus = z.enum(["pending", "processing", "completed", "failed", "reversed"]);
export type TransactionStatus = z.infer<typeof TransactionStatus>;

/** A payment as it is now: `reversed` once a completed payment was returned (e.g. an ACH return), also on an idempotent replay. */
export const PaymentStatus = z.enum(["pending", "processing", "completed", "failed", "reversed"]);
export type PaymentStatus = z.infer<typeof PaymentStatus>;

export const Rail = z.enum(["x402", "usdc_transfer", "fiat"]);
export type Rail = z.infer<typeof Rail>;

export const Currency = z.enum(["usd", "usdc"]);
export type Currency = z.infer<typeof Currency>;

export const Permission = z.enum(["read", "pay", "x402", "delegate"]).describe("read, pay, x402; delegate: may create child tokens no wider than itself (POST /v1/tokens).");
export type Permission = z.infer<typeof Permission>;

export const HttpMethod = z.enum(["GET", "POST", "PUT", "DELETE"]);
export type HttpMethod = z.infer<typeof HttpMethod>;

const isoTimestamp = z.string().describe("ISO 8601 timestamp (UTC)");

/** Why a failed or reversed payment ended so: present only on those (additions to the spec's shapes). */
const failureFields = {
  failure_code: z
    .string()
    .optional()
    .describe("Failed or reversed only: why, as a stable snake_case code (e.g. ach_returned, onchain_reverted, authorization_expired; see docs/errors.md)."),
  failure_message: z
    .string()
    .optional()
    .describe("Failed or reversed only: what happened, for people (the ACH return code, the revert, the merchant's answer)."),
};
const microsUsdc = z.number().int().nonnegative();

/** A payment that needed a person's approval: where it stands. Present only on such payments (an addition to the spec's shapes). */
export const ApprovalState = z
  .object({
    status: z
      .enum(["required", "approved", "denied", "expired"])
      .describe("required: waiting for a person (the payment stays pending); approved: it is being sent; denied or expired: it failed and was credited back."),
    expires_at: isoTimestamp.describe("Not decided by then, the payment fails and is credited back (approval_expired)."),
    decided_at: isoTimestamp.nullable().describe("When a person approved or denied it; null while waiting or when it expired."),
    reason: z.string().optional().describe("Approved or denied only: the reason the person gave, when they gave one (also in payment.approved / payment.denied events)."),
    decided_by_name: z
      .string()
      .optional()
      .describe("Approved or denied by an operator (the console, the admin API or the CLI) only: the deciding credential's name as it was then (also in payment.approved / payment.denied events)."),
  });
export type ApprovalState = z.infer<typeof ApprovalState>;
const approvalField = {
  approval: ApprovalState.optional().describe(
    "Only on a payment above its token's approval threshold: whether a person has approved it yet. Check again with GET /v1/transactions/{id}.",
  ),
};

// ---------------------------------------------------------------------------------------------
// Errors

export const ErrorBody = z
  .object({
    detail: z.string().describe("Human-readable message: what went wrong and how to fix it."),
    code: z.string().optional().describe("Stable snake_case error code (see docs/errors.md)."),
  })
  .meta({ id: "Error" });
export type ErrorBody = z.infer<typeof ErrorBody>;

/** `GET /healthz`: the process answers (liveness). */
export const Health = z.object({ status: z.literal("ok") }).meta({ id: "Health" });

/** `GET /readyz`: the database answers (readiness), and whether settlement follows payments yet. */
export const Readiness = z
  .object({
    status: z.literal("ready"),
    settlement: z
      .enum(["running", "starting"])
      .optional()
      .describe("Whether settlement follows accepted payments yet (its thread may still be starting); payments accepted meanwhile settle once it runs."),
  })
  .meta({ id: "Readiness" });

// ---------------------------------------------------------------------------------------------
// Resources

export const Balance = z
  .object({
    project_id: z.string().describe("Unique project identifier."),
    currency: z.literal("usdc"),
    available: microsUsdc.describe("Spendable balance, micro-USDC (1 USDC = 1,000,000)."),
    pending: microsUsdc.describe("Deposits seen on-chain but not yet confirmed, micro-USDC."),
    total_funded: microsUsdc.describe("Cumulative confirmed funding, micro-USDC."),
    total_spent: microsUsdc.describe("Cumulative amount + fee of payments not failed or reversed, micro-USDC."),
    wallet_address: z.string().nullable().describe("Deposit wallet address; null until one is created."),
    // Added after the contract: optional to a reader, so a client of this package still reads an older server.
    frozen: z
      .boolean()
      .optional()
      .describe("True while USDC's blacklister has frozen the deposit wallet: no payment can move its USDC, so `available` is 0 and payments are refused (403 `wallet_frozen`) until it is released."),
    frozen_amount: microsUsdc.optional().describe("While frozen, the balance that would be available but cannot move, micro-USDC; 0 otherwise."),
    frozen_since: z.string().nullable().optional().describe("When the freeze was first seen (ISO 8601); null while the wallet is not frozen."),
  })
  .meta({ id: "Balance" });
export type Balance = z.infer<typeof Balance>;

export const DepositAddress = z
  .object({
    project_id: z.string(),
    chain: z.literal("base"),
    address: z.string().describe("EVM address that receives USDC deposits on Base. Send only USDC on Base."),
    currency: z.literal("usdc"),
  })
  .meta({ id: "DepositAddress" });
export type DepositAddress = z.infer<typeof DepositAddress>;

export const Transaction = z
  .object({
    id: z.string().describe("Unique transaction identifier."),
    type: TransactionType,
    status: TransactionStatus,
    amount: z.number().int().nonnegative().describe("Cents when currency is usd, micro-USDC when currency is usdc."),
    currency: Currency,
    description: z.string().nullable().optional(),
    merchant_name: z.string().nullable().optional(),
    created_at: isoTimestamp,
    completed_at: isoTimestamp.nullable().optional(),
    ...failureFields,
    metadata: z
      .record(z.string(), z.string())
      .nullable()
      .optional()
      .describe("The payment's metadata as given when it was made, on the payment's own row; null otherwise."),
  })
  .meta({ id: "Transaction" });
export type Transaction = z.infer<typeof Transaction>;

export const Metadata = z
  .record(
    z.string().min(1).max(limits.metadataKeyMaxChars),
    z.string().max(limits.metadataValueMaxChars),
  )
  .refine((m) => Object.keys(m).length <= limits.metadataKeysMax, { message: `must have at most ${limits.metadataKeysMax} keys` })
  .describe(
    `Your own key-value tags for the payment (e.g. an order id): at most ${limits.metadataKeysMax} keys of 1-${limits.metadataKeyMaxChars} characters, ` +
      `string values of at most ${limits.metadataValueMaxChars} characters. Stored and shown with the payment, never interpreted.`,
  );
export type Metadata = z.infer<typeof Metadata>;

/** One transaction as `GET /v1/transactions/{id}` shows it: the list item and what applies of the rest. */
export const TransactionDetail = Transaction.extend({
  rail: Rail.nullable().describe("The payment's rail; null for deposits and other rows that are not payments."),
  recipient: z
    .string()
    .nullable()
    .describe("The URL, the EVM address, or the bank recipient's name with the account's last four digits (never the full number); null when not a payment."),
  tx_hash: z.string().nullable().describe("On-chain hash (USDC and x402 payments, deposits); null otherwise or while not yet known."),
  payment_id: z
    .string()
    .nullable()
    .describe("On a platform_fee row, the payment it belongs to; on a payment, the id of its platform_fee row; null otherwise."),
  metadata: Metadata.nullable(),
  waiting: z
    .object({
      code: z.string().describe("Why, as a stable snake_case code: relayer_unfunded (the service's relayer has too little ETH for gas; see docs/errors.md)."),
      detail: z.string().describe("What holds the payment, for people."),
      since: isoTimestamp.describe("Since when it holds."),
    })
    .optional()
    .describe("Processing payments only, and only while the service knows why one is not moving: nothing is lost, it goes on by itself once the cause is gone."),
  ...approvalField,
}).meta({ id: "TransactionDetail" });
export type TransactionDetail = z.infer<typeof TransactionDetail>;

/** One evidence record of a payment: a change of it, hash-chained with the project's other records. */
export const EvidenceRecord = z
  .object({
    seq: z.number().int().describe("The record's number in the project's chain: 1, 2, … without gaps."),
    kind: z.string().describe("What changed: created, a status (processing, completed, failed, reversed), approval_<decision>, or progress (a rail stage: signed, settled, relayed, a provider's transfer)."),
    at: z.string().describe("When the change was made (ISO 8601)."),
    body: z.string().describe("The payment as the change left it, as JSON text, exactly as hashed: its rail state (what was signed, sent and received, the settlement and its Transfer log), the controls that admitted it (`admitted`, in the payment's `created` record; later records leave it out) and the approval."),
    prev_hash: z.string().describe("The hash of the project's previous record (64 zeros for the first)."),
    hash: z.string().describe("sha256 hex of prev_hash, seq, project id, payment id, kind, at and body, joined by newlines."),
  })
  .meta({ id: "EvidenceRecord" });
export type EvidenceRecord = z.infer<typeof EvidenceRecord>;

/** `GET /v1/transactions/{id}/evidence`: the records of the transaction's payment, oldest first. */
export const TransactionEvidence = z
  .object({
    transaction_id: z.string(),
    payment_id: z.string().nullable().describe("The payment whose records these are; null for a transaction that is not a payment's (a deposit): no records."),
    project_id: z.string(),
    records: z.array(EvidenceRecord),
    chain_head: z.object({ seq: z.number().int(), hash: z.string() }).describe("The project's last record: `agentwallet verify-evidence` checks every record up to it."),
  })
  .meta({ id: "TransactionEvidence" });
export type TransactionEvidence = z.infer<typeof TransactionEvidence>;

export const TransactionList = z
  .object({
    transactions: z.array(Transaction),
    total_count: z.number().int().nonnegative().describe("Number of transactions across all pages."),
    has_more: z.boolean(),
  })
  .meta({ id: "TransactionList" });
export type TransactionList = z.infer<typeof TransactionList>;

/** Query parameters arrive as text; bounds are checked by the server with messages naming them. */
export const ListTransactionsQuery = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(limits.pageLimitMin)
    .max(limits.pageLimitMax)
    .default(limits.pageLimitDefault)
    .describe(`Page size, ${limits.pageLimitMin} to ${limits.pageLimitMax}, default ${limits.pageLimitDefault}.`),
  offset: z.coerce
    .number()
    .int()
    .min(0)
    .max(limits.pageOffsetMax)
    .default(0)
    .describe(
      `Number of transactions to skip (newest first), at least 0, default 0. With a filter it skips rows of the filtered list ` +
        `and is at most ${limits.filteredOffsetMax}; it cannot be combined with starting_after.`,
    ),
  type: z
    .string()
    .optional()
    .describe("Only these transaction types: one or more of " + TransactionType.options.join(", ") + ", comma-separated or the parameter repeated."),
  status: z
    .string()
    .optional()
    .describe("Only these statuses: one or more of " + TransactionStatus.options.join(", ") + ", comma-separated or the parameter repeated."),
  created_after: z.string().optional().describe("Only transactions created strictly after this ISO 8601 time (e.g. 2026-01-31T00:00:00Z)."),
  created_before: z.string().optional().describe("Only transactions created strictly before this ISO 8601 time."),
  starting_after: z
    .string()
    .optional()
    .describe("Cursor: the id of the last transaction of the previous page; the page holds the transactions listed after it (older ones)."),
});
export type ListTransactionsQuery = z.infer<typeof ListTransactionsQuery>;

// ---------------------------------------------------------------------------------------------
// Request pieces

export const Description = z
  .string()
  .max(limits.descriptionMaxChars)
  .describe(`Free text recorded with the transaction, at most ${limits.descriptionMaxChars} characters.`);

export const IdempotencyKey = z
  .string()
  .min(1)
  .max(limits.idempotencyKeyMaxChars)
  .regex(idempotencyKeyPattern, "may contain only letters, digits, '_', '-', ':' and '.'")
  .describe(
    "Client-chosen key; a repeat within the project returns the original payment instead of paying again. " +
      "Letters, digits, _ - : . only; at most 255 characters.",
  );

/**
 * A bank account's two numbers as every endpoint takes them: a payment's recipient, and an allow- or
 * block-list entry (the admin API, the CLI), so a list can name exactly the accounts a payment can pay.
 */
export const RoutingNumber = z
  .string()
  .regex(routingNumberPattern, "must be exactly 9 digits")
  .refine(abaChecksumValid, "is not a valid ABA routing number (its check digit does not match; check it for typos)")
  .describe("ABA routing number, exactly 9 digits.");
export const AccountNumber = z
  .string()
  .min(limits.bankAccountNumberMinChars)
  .max(limits.bankAccountNumberMaxChars)
  .describe("Bank account number, 4-34 characters.");

export const BankRecipient = z
  .strictObject({
    name: z.string().min(1).max(limits.bankNameMaxChars).describe("Account holder name, 1-200 characters."),
    account_number: AccountNumber,
    routing_number: RoutingNumber,
    email: z.string().max(limits.bankEmailMaxChars).optional().describe("Recipient email, up to 254 characters."),
  })
  .meta({ id: "BankRecipient" });
export type BankRecipient = z.infer<typeof BankRecipient>;

export const ProxiedHeaders = z
  .record(z.string(), z.string())
  .describe("Extra HTTP headers for the proxied request (URL recipients only).");

// ---------------------------------------------------------------------------------------------
// POST /v1/pay

export const PayRequest = z
  .strictObject({
    recipient: z
      .union([z.string().min(1), BankRecipient])
      .describe(
        "Who gets paid; its shape picks the rail: an https URL (x402: pay an HTTP API that answers 402), " +
          "a 0x-prefixed EVM address (on-chain USDC transfer on Base), or a bank details object (USD by ACH).",
      ),
    amount_usd: z
      .number()
      .positive()
      .optional()
      .describe(
        "Amount in US dollars, e.g. 2.5 for $2.50. Required for USDC transfers (up to 6 decimals, at most 100,000) " +
          "and bank payments (up to 2 decimals, at most 1,000,000). Not used for URLs: the target sets the price.",
      ),
    max_amount_usdc: z
      .number()
      .int()
      .min(limits.x402MaxAmountMicrosMin)
      .max(limits.x402MaxAmountMicrosMax)
      .optional()
      .describe(
        "URL recipients only: the most the target may charge, in micro-USDC (1 USDC = 1,000,000; 10000 = $0.01). " +
          "A higher price is refused with 400 and nothing is paid.",
      ),
    description: Description.optional(),
    idempotency_key: IdempotencyKey.optional(),
    metadata: Metadata.optional(),
    method: HttpMethod.optional().describe("HTTP method for the proxied request (URL recipients only), default GET."),
    headers: ProxiedHeaders.optional(),
    body: z
      .string()
      .max(limits.proxiedBodyMaxChars)
      .optional()
      .describe("Body for a proxied POST or PUT (URL recipients only)."),
    quote_id: z
      .string()
      .min(1)
      .max(64)
      .optional()
      .describe(
        "URL recipients only: a quote from POST /v1/quote for this same request. The payment is made only if the target still asks " +
          "exactly the quoted amount, payTo, network and asset; otherwise 409 quote_changed and nothing is signed.",
      ),
  })
  .meta({ id: "PayRequest" });
export type PayRequest = z.infer<typeof PayRequest>;

export const ProxiedResponse = z
  .object({
    status_code: z.number().int(),
    headers: z.record(z.string(), z.string()),
    body: z.string(),
  })
  .meta({ id: "ProxiedResponse" });
export type ProxiedResponse = z.infer<typeof ProxiedResponse>;

export const PayResponse = z
  .object({
    id: z.string().describe("Transaction identifier."),
    status: PaymentStatus,
    rail: Rail,
    amount_charged: z.number().int().nonnegative().describe("Micro-USDC for x402 and usdc_transfer; cents for fiat."),
    fee: z.number().int().nonnegative().describe("Platform fee, in the same unit as amount_charged."),
    currency: Currency,
    recipient: z.string().describe("The URL, the EVM address, or the bank recipient's name."),
    tx_hash: z.string().nullable(),
    created_at: isoTimestamp,
    estimated_arrival: z.string().nullable(),
    response: ProxiedResponse.nullable(),
    protocol: z
      .literal("mpp")
      .optional()
      .describe("Present when a URL recipient was paid by the Machine Payments Protocol (its 402 offered an MPP challenge and no x402 requirement); absent when it was paid by x402."),
    ...failureFields,
    metadata: z.record(z.string(), z.string()).nullable().optional().describe("The metadata given with the payment; null if none."),
    ...approvalField,
  })
  .meta({ id: "PayResponse" });
export type PayResponse = z.infer<typeof PayResponse>;

// ---------------------------------------------------------------------------------------------
// POST /v1/quote and GET /v1/x402/resources

export const QuoteRequest = z
  .strictObject({
    recipient: z.string().min(1).describe("The https URL to price: the same recipient a POST /v1/pay would pay."),
    max_amount_usdc: PayRequest.shape.max_amount_usdc,
    method: PayRequest.shape.method,
    headers: ProxiedHeaders.optional(),
    body: PayRequest.shape.body,
  })
  .meta({ id: "QuoteRequest" });
export type QuoteRequest = z.infer<typeof QuoteRequest>;

/** Whose limit a window is (`GET /v1/limits`, a quote's controls): see LimitWindow.scope. */
export const LimitScope = z.enum(["token", "project", "allowance", "ancestor", "ancestor_allowance"]);
export type LimitScope = z.infer<typeof LimitScope>;
const limitTokenId = z.string().optional().describe("The token whose limit it is (the token itself or an ancestor); absent for the project's.");

export const QuoteWindow = z
  .object({
    scope: LimitScope,
    token_id: limitTokenId,
    interval: z.enum(["daily", "weekly", "monthly", "all_time"]),
    window_end: isoTimestamp.nullable().describe("When the window ends (UTC calendar); null for all_time."),
    limit_usd: z.number().nonnegative(),
    spent_usd: z.number().nonnegative(),
    remaining_usd: z.number().nonnegative().describe("What remains now, before this payment."),
  });

export const QuoteResponse = z
  .object({
    quote_id: z
      .string()
      .nullable()
      .describe("Pass it as quote_id to POST /v1/pay to pay exactly this price, or nothing; null when the target asks no payment."),
    expires_at: isoTimestamp.nullable().describe("The quote_id is accepted until then."),
    recipient: z.string(),
    method: HttpMethod,
    payment_required: z.boolean().describe("false: the target answered without asking to be paid (its reply is in response); nothing would be charged."),
    protocol: z.enum(["x402", "mpp"]).nullable(),
    amount_usdc: microsUsdc.nullable().describe("The price in micro-USDC (1 USDC = 1,000,000)."),
    amount_usd: z.number().nonnegative().nullable().describe("The price in US dollars."),
    fee_usdc: microsUsdc.nullable().describe("This service's fee on top, in micro-USDC (the wallet is debited amount + fee)."),
    fee_usd: z.number().nonnegative().nullable(),
    requirement: z
      .object({
        scheme: z.string().describe("x402's scheme (exact), or evm/charge for MPP."),
        network: z.string().describe("CAIP-2 id, e.g. eip155:8453."),
        asset: z.string().describe("The token contract (USDC)."),
        pay_to: z.string().describe("Who the target would be paid to."),
        max_timeout_seconds: z.number().int().nullable(),
      })
      .nullable()
      .describe("The requirement a payment would choose (the cheapest this service can pay)."),
    offer: z
      .object({
        format: z.enum(["eip712", "jws"]),
        payload: z.record(z.string(), z.unknown()).describe("The signed offer's terms as the merchant signed them."),
        signature: z.string(),
        verification: z
          .enum(["verified", "invalid", "not_checked"])
          .describe("verified: the signature (EIP-712, or JWS under its kid's key) is the offer's payTo's (the spec's payTo-signing authorisation) and its terms match the requirement; invalid: it does not; not_checked: a JWS offer whose key cannot be had offline (a did:web kid) or whose alg is not ES256K or EdDSA."),
        signer: z.string().nullable(),
        reason: z.string().nullable().describe("Why it is invalid or not checked."),
      })
      .nullable()
      .describe("The merchant's signed offer (x402 offer-and-receipt extension) for the chosen requirement, if it sent one."),
    controls: z
      .object({
        verdict: z.enum(["would_pay", "needs_approval", "refused"]),
        code: z.string().nullable().describe("For refused: the code a payment would get (spending_limit_exceeded, recipient_not_allowed, rail_not_allowed, approval_required)."),
        detail: z.string().describe("The rule that decides, in words."),
        windows: z.array(QuoteWindow).describe("Every limited window of the token and its project, with what remains in it now."),
      })
      .nullable()
      .describe("What the token's spending controls (and its project's) would say to this payment, judged as the payment's hold judges them."),
    balance_sufficient: z.boolean().nullable().describe("Whether the available balance covers amount + fee now."),
    response: ProxiedResponse.nullable().describe("When no payment is required: the target's reply."),
  })
  .meta({ id: "QuoteResponse" });
export type QuoteResponse = z.infer<typeof QuoteResponse>;

export const DiscoveryQuery = z.object({
  query: z.string().max(500).optional().describe("Words to search for (the facilitator's /discovery/search); without it, the catalogue is listed (/discovery/resources)."),
  limit: z.coerce.number().int().min(1).max(100).optional().describe("At most this many; up to 100."),
  offset: z.coerce.number().int().min(0).max(10_000).optional().describe("Listing only: skip this many."),
  cursor: z.string().max(500).optional().describe("Search only: the cursor of the previous page."),
});

export const DiscoveredResource = z
  .object({
    resource: z.string().describe("The paid URL."),
    type: z.string(),
    description: z.string().nullable(),
    last_updated: z.string().nullable().describe("When the catalogue last saw it."),
    price_hint: z
      .object({
        amount_usdc: microsUsdc.nullable().describe("The cheapest price the catalogue lists, in micro-USDC; null if it lists none this service could pay."),
        network: z.string().nullable(),
        pay_to: z.string().nullable(),
      })
      .describe("A hint only: catalogues go stale. POST /v1/quote asks the resource itself."),
    accepts: z.array(z.record(z.string(), z.unknown())).describe("The payment requirements as the catalogue lists them."),
  })
  .meta({ id: "DiscoveredResource" });

export const DiscoveryResponse = z
  .object({
    resources: z.array(DiscoveredResource),
    prices_are_hints: z.literal(true).describe("Always true: check the price with POST /v1/quote before paying."),
    partial_results: z.boolean(),
    pagination: z.object({ limit: z.number().int().nullable(), offset: z.number().int().nullable(), total: z.number().int().nullable(), cursor: z.string().nullable() }),
  })
  .meta({ id: "DiscoveryResponse" });
export type DiscoveryResponse = z.infer<typeof DiscoveryResponse>;

// ---------------------------------------------------------------------------------------------
// Deprecated endpoints

export const LegacyPaymentRequest = z
  .strictObject({
    amount: z
      .number()
      .int()
      .min(limits.paymentAmountCentsMin)
      .max(limits.paymentAmountCentsMax)
      .describe("Amount in cents, 1 to 100,000,000."),
    recipient: BankRecipient,
    description: Description.optional(),
    idempotency_key: IdempotencyKey.optional(),
    metadata: Metadata.optional(),
  })
  .meta({ id: "LegacyPaymentRequest" });
export type LegacyPaymentRequest = z.infer<typeof LegacyPaymentRequest>;

export const LegacyPaymentResponse = z
  .object({
    id: z.string(),
    status: PaymentStatus,
    amount: z.number().int().nonnegative().describe("Cents."),
    recipient_name: z.string(),
    created_at: isoTimestamp,
    estimated_arrival: z.string().nullable(),
    ...failureFields,
    metadata: z.record(z.string(), z.string()).nullable().optional().describe("The metadata given with the payment; null if none."),
  })
  .meta({ id: "LegacyPaymentResponse" });
export type LegacyPaymentResponse = z.infer<typeof LegacyPaymentResponse>;

export const X402PayRequest = z
  .strictObject({
    url: z.string().min(1).max(limits.urlMaxChars).describe("URL of the paid HTTP API, at most 2048 characters."),
    method: HttpMethod.optional(),
    headers: ProxiedHeaders.optional(),
    body: z.string().max(limits.proxiedBodyMaxChars).optional(),
    max_amount_usdc: z
      .number()
      .int()
      .min(limits.x402MaxAmountMicrosMin)
      .max(limits.x402MaxAmountMicrosMax)
      .describe("Most the target may charge, micro-USDC, 1 to 100,000,000 (100 USDC)."),
    metadata: Metadata.optional(),
  })
  .meta({ id: "X402PayRequest" });
export type X402PayRequest = z.infer<typeof X402PayRequest>;

export const X402PayResponse = z
  .object({
    status_code: z.number().int(),
    headers: z.record(z.string(), z.string()),
    body: z.string(),
    payment_amount: z.number().int().nonnegative().describe("Micro-USDC paid to the target; 0 if no payment was required."),
    fee_amount: z.number().int().nonnegative().describe("Platform fee, micro-USDC."),
    tx_hash: z.string().nullable(),
    settled: z.boolean(),
    metadata: z.record(z.string(), z.string()).nullable().optional().describe("The metadata given with the payment; null if none."),
  })
  .meta({ id: "X402PayResponse" });
export type X402PayResponse = z.infer<typeof X402PayResponse>;

export const UsdcTransferRequest = z
  .strictObject({
    amount_usdc: z
      .number()
      .positive()
      .max(limits.usdcTransferMaxUsd)
      .describe("Amount in USDC (not micro-USDC), up to 6 decimals, at most 100,000."),
    to_address: z
      .string()
      .regex(evmAddressPattern, "must be 0x followed by 40 hexadecimal characters")
      .describe("Recipient EVM address on Base; the zero address is rejected."),
    chain: z.string().optional().describe("Network to send on; only `base` is supported (the default)."),
    description: Description.optional(),
    // The spec bounds this endpoint's key by length only; control characters are still refused.
    idempotency_key: z
      .string()
      .min(1)
      .max(limits.idempotencyKeyMaxChars)
      .regex(/^[^\u0000-\u001f\u007f]+$/, "must not contain control characters")
      .optional(),
    metadata: Metadata.optional(),
  })
  .meta({ id: "UsdcTransferRequest" });
export type UsdcTransferRequest = z.infer<typeof UsdcTransferRequest>;

export const UsdcTransferResponse = z
  .object({
    id: z.string(),
    status: PaymentStatus,
    amount_usdc: z.number().nonnegative(),
    fee_usdc: z.number().nonnegative(),
    to_address: z.string(),
    chain: z.string(),
    tx_hash: z.string().nullable(),
    created_at: isoTimestamp,
    ...failureFields,
    metadata: z.record(z.string(), z.string()).nullable().optional().describe("The metadata given with the payment; null if none."),
  })
  .meta({ id: "UsdcTransferResponse" });
export type UsdcTransferResponse = z.infer<typeof UsdcTransferResponse>;

// ---------------------------------------------------------------------------------------------
// Spending controls and GET /v1/limits

export const SpendingInterval = z.enum(["per_payment", "daily", "weekly", "monthly", "all_time"]);
export type SpendingInterval = z.infer<typeof SpendingInterval>;

const usdAmount = z
  .number()
  .positive()
  .max(limits.controlsAmountUsdMax)
  .describe("US dollars, up to 6 decimal places.");

export const SpendingLimit = z
  .object({
    amount_usd: usdAmount,
    interval: SpendingInterval.describe("per_payment, or a UTC calendar window: daily (from 00:00), weekly (from Monday), monthly (from the 1st), all_time."),
  })
  .strict()
  .meta({ id: "SpendingLimit" });

const RecipientRule = z.union([
  z.string().min(1).max(253).describe("An x402 host (api.example.com, *.example.com), an EVM address (0x…), or bank:ROUTING:ACCOUNT."),
  z.object({ routing_number: RoutingNumber, account_number: AccountNumber }).strict(),
]);

/** Controls as an operator writes them: every field optional; on an update, the fields given replace theirs. */
export const SpendingControlsInput = z
  .object({
    spending_limits: z.array(SpendingLimit).max(10).optional().describe("The limits (one per interval; [] removes every limit)."),
    allowed_recipients: z.array(RecipientRule).max(limits.controlsRecipientsMax).nullable().optional().describe("Only these may be paid; null allows any."),
    blocked_recipients: z.array(RecipientRule).max(limits.controlsRecipientsMax).optional().describe("Never paid (wins over the allow-list)."),
    allowed_rails: z.array(Rail).nullable().optional().describe("Only these rails; null allows all."),
    approval_above_usd: usdAmount.nullable().optional().describe("USDC and fiat payments above this wait for a person's approval; x402 above it is refused. null removes it."),
  })
  .strict()
  .meta({ id: "SpendingControlsInput" });
export type SpendingControlsInput = z.infer<typeof SpendingControlsInput>;

/** Controls as stored and shown: bank accounts by routing number and last four digits only. */
export const SpendingControls = z
  .object({
    spending_limits: z.array(SpendingLimit),
    allowed_recipients: z.array(z.string()).nullable(),
    blocked_recipients: z.array(z.string()),
    allowed_rails: z.array(Rail).nullable(),
    approval_above_usd: z.number().nonnegative().nullable(),
  })
  .meta({ id: "SpendingControls" });
export type SpendingControls = z.infer<typeof SpendingControls>;

export const LimitWindow = z
  .object({
    scope: LimitScope.describe(
      "Whose limit: the token's own (token), its project's, the token's allowance (the most it may ever spend, an all_time window), " +
        "or, for a child token, an ancestor's limit or allowance (its payments count there too). Every window binds; the stricter wins.",
    ),
    token_id: limitTokenId,
    interval: z.enum(["daily", "weekly", "monthly", "all_time"]),
    window_start: isoTimestamp.nullable().describe("Start of the current window; null for all_time."),
    window_end: isoTimestamp.nullable().describe("End of the current window (exclusive); null for all_time."),
    limit_usd: z.number().nonnegative(),
    spent_usd: z.number().nonnegative().describe("Payment amounts counted in this window (fees are not counted; failed payments give theirs back)."),
    remaining_usd: z.number().nonnegative(),
  })
  .meta({ id: "LimitWindow" });

export const Limits = z
  .object({
    token: SpendingControls.nullable().describe("The token's own controls; null when it has none."),
    project: SpendingControls.nullable().describe("The project's controls, obeyed by every token of it; null when none."),
    windows: z.array(LimitWindow).describe("Per limited window: spent and remaining now."),
  })
  .meta({ id: "Limits" });
export type Limits = z.infer<typeof Limits>;

// ---------------------------------------------------------------------------------------------
// Admin API (`/v1/admin/…`, authenticated by an operator's admin credential, never a project token)

export const AdminProject = z
  .object({
    id: z.string(),
    name: z.string(),
    plan: z.enum(["free", "pro", "business"]),
    paused: z.boolean().describe("Paused projects have their new payments refused (403 project_paused)."),
    wallet_index: z.number().int().nonnegative(),
    wallet_address: z.string().nullable().describe("The deposit address; null until first asked for."),
    spending_controls: SpendingControls.nullable(),
    created_at: isoTimestamp,
  })
  .meta({ id: "AdminProject" });
export type AdminProject = z.infer<typeof AdminProject>;

export const AdminProjectList = z.object({ data: z.array(AdminProject) }).meta({ id: "AdminProjectList" });

export const CreateProjectRequest = z
  .object({
    name: z.string().min(1).max(limits.projectNameMaxChars),
    plan: z.enum(["free", "pro", "business"]).optional().describe("Sets the platform fee rate; default free."),
  })
  .strict()
  .meta({ id: "CreateProjectRequest" });

export const AdminToken = z
  .object({
    id: z.string(),
    project_id: z.string(),
    display_prefix: z.string().describe("The token's first characters, to recognise it; the token itself is never shown again."),
    name: z.string().nullable().describe("Who holds it, as its creator named it; null when unnamed."),
    permissions: z.array(Permission),
    spending_controls: SpendingControls.nullable(),
    parent_id: z.string().nullable().describe("The token that created this one (POST /v1/tokens); null for a token an operator issued."),
    depth: z.number().int().nonnegative().describe("0 for an operator's token, its parent's depth + 1 for a child."),
    allowance_usd: z.number().nonnegative().nullable().describe("The most this token may ever spend, its descendants' payments included; null: no allowance of its own."),
    created_at: isoTimestamp,
    expires_at: isoTimestamp.nullable(),
    revoked_at: isoTimestamp.nullable().describe("When it, or an ancestor (which revokes every descendant), was revoked."),
    state: z.enum(["active", "expired", "revoked"]),
  })
  .meta({ id: "AdminToken" });
export type AdminToken = z.infer<typeof AdminToken>;

export const CreatedAdminToken = AdminToken.extend({
  token: z.string().describe("The API token (aw_live_… / aw_test_…), shown this once: only its hash is stored."),
}).meta({ id: "CreatedAdminToken" });

export const AdminTokenList = z.object({ data: z.array(AdminToken) }).meta({ id: "AdminTokenList" });

const tokenName = z.string().min(1).max(limits.tokenNameMaxChars).describe("A name for people: which agent holds the token.");

export const CreateTokenRequest = z
  .object({
    name: tokenName.optional(),
    permissions: z.array(Permission).min(1).max(4),
    expires_in_seconds: z.number().int().positive().max(limits.tokenExpiresInSecondsMax).optional().describe("Lifetime; without it the token does not expire."),
    spending_controls: SpendingControlsInput.optional(),
  })
  .strict()
  .meta({ id: "CreateTokenRequest" });
export type CreateTokenRequest = z.infer<typeof CreateTokenRequest>;

// ---------------------------------------------------------------------------------------------
// Child tokens (`/v1/tokens`, authenticated by a project token with `delegate`)

export const CreateChildTokenRequest = z
  .object({
    name: tokenName.optional(),
    permissions: z.array(Permission).min(1).max(4).describe("A subset of the calling token's; delegate only if it has delegate and the depth allows a grandchild."),
    expires_in_seconds: z.number().int().positive().max(limits.tokenExpiresInSecondsMax).optional().describe("Lifetime; at most the calling token's. Without it: the calling token's expiry (none if it has none)."),
    spending_controls: SpendingControlsInput.optional().describe("At most the calling token's in every field; a field not given is inherited from it."),
    allowance_usd: usdAmount.optional().describe("The most the child (with its own descendants) may ever spend; at most the calling token's allowance."),
  })
  .strict()
  .meta({ id: "CreateChildTokenRequest" });
export type CreateChildTokenRequest = z.infer<typeof CreateChildTokenRequest>;

/** A descendant as its ancestors see it: its shape, and what it and its own descendants have spent. */
export const ChildToken = AdminToken.extend({
  spent_usd: z.number().nonnegative().describe("Payment amounts of the token and its descendants that are neither failed nor reversed, all time."),
}).meta({ id: "ChildToken" });
export type ChildToken = z.infer<typeof ChildToken>;

export const CreatedChildToken = ChildToken.extend({
  token: z.string().describe("The API token (aw_live_… / aw_test_…), shown this once: only its hash is stored. Hand it to the sub-agent."),
}).meta({ id: "CreatedChildToken" });
export type CreatedChildToken = z.infer<typeof CreatedChildToken>;

export const ChildTokenList = z.object({ data: z.array(ChildToken).describe("Every descendant of the calling token (children, their children, …), oldest first.") }).meta({ id: "ChildTokenList" });

export const PendingApproval = z
  .object({
    id: z.string().describe("The payment's id."),
    project_id: z.string(),
    token_id: z.string().nullable(),
    rail: Rail,
    amount_usd: z.number().nonnegative(),
    recipient: z.string(),
    created_at: isoTimestamp,
    approval_until: isoTimestamp.describe("Not decided by then, it fails and is credited back (approval_expired)."),
  })
  .meta({ id: "PendingApproval" });

export const PendingApprovalList = z.object({ data: z.array(PendingApproval) }).meta({ id: "PendingApprovalList" });

export const ApprovalDecision = z
  .object({
    id: z.string(),
    decision: z.enum(["approved", "denied"]),
    status: PaymentStatus.describe("approved: pending until the worker sends it; denied: failed and credited back."),
    decided_by: z.string().nullable().describe("Who decided: the admin credential's id, or cli:<user>."),
    decided_by_name: z.string().nullable().describe("The decider's name when they decided: the admin credential's name, or the CLI's user."),
    decided_at: isoTimestamp.nullable(),
    reason: z.string().nullable().describe("The reason the decider gave, if any."),
  })
  .meta({ id: "ApprovalDecision" });

export const DecisionRequest = z
  .object({ reason: z.string().max(limits.decisionReasonMaxChars).optional().describe("Why: kept on the payment (its history) and in the audit log.") })
  .strict()
  .meta({ id: "DecisionRequest" });

export const Refusal = z
  .object({
    project_id: z.string(),
    token_id: z.string().nullable(),
    code: z.string().describe("spending_limit_exceeded, recipient_not_allowed, rail_not_allowed or approval_required."),
    detail: z.string(),
    rail: z.string(),
    recipient: z.string(),
    amount_usd: z.number().nonnegative().nullable(),
    created_at: isoTimestamp,
  })
  .meta({ id: "Refusal" });

export const RefusalList = z.object({ data: z.array(Refusal) }).meta({ id: "RefusalList" });

export const AdminPendingQuery = z.object({
  project_id: z.string().max(100).optional().describe("Only this project's; all projects without it."),
  limit: z.coerce.number().int().min(1).max(limits.adminPendingMax).optional().describe(`At most this many, oldest first; up to ${limits.adminPendingMax}.`),
});

export const AdminRefusalsQuery = z.object({
  project_id: z.string().max(100).optional().describe("Only this project's; all projects without it."),
  limit: z.coerce.number().int().min(1).max(limits.adminRefusalsMax).optional().describe(`At most this many, newest first; default ${limits.adminRefusalsDefault}, up to ${limits.adminRefusalsMax}.`),
});

export const AuditQuery = z.object({
  project_id: z.string().max(100).optional().describe("Only this project's entries; every entry without it."),
  action: z.string().max(60).optional().describe("Only this action, e.g. token.revoked."),
  before: z.coerce.number().int().min(1).optional().describe("Entries older than this `seq` (the previous page's `next_before`)."),
  limit: z.coerce.number().int().min(1).max(limits.adminAuditMax).optional().describe(`At most this many, newest first; default ${limits.adminAuditDefault}, up to ${limits.adminAuditMax}.`),
});

export const AuditEntry = z
  .object({
    seq: z.number().int().describe("Increasing with time; the page cursor."),
    at: isoTimestamp,
    actor: z.object({
      id: z.string().describe("adm_… (admin credential), tok_… (a project token in the console), or cli:<user>."),
      name: z.string(),
      role: z.enum(["viewer", "approver", "admin"]).nullable().describe("The admin credential's role; null for a token or the CLI."),
      ip: z.string().nullable().describe("The client's address; null on the CLI."),
    }),
    action: z.string().describe("project.paused, project.resumed, project.controls_changed, token.created, token.controls_changed, token.revoked, webhook.created, webhook.deleted, webhook.enabled, approval.decided, credential.created, credential.revoked."),
    project_id: z.string().nullable(),
    target_id: z.string(),
    before: z.unknown().describe("The changed fields before (null for a creation)."),
    after: z.unknown().describe("The changed fields after."),
  })
  .meta({ id: "AuditEntry" });

export const AuditList = z
  .object({ data: z.array(AuditEntry), next_before: z.number().int().nullable().describe("Pass as `before` for the next page; null on the last.") })
  .meta({ id: "AuditList" });

// ---------------------------------------------------------------------------------------------
// Webhooks to clients, managed through the admin API (and the `agentwallet webhooks` CLI)

export const WebhookEventType = z
  .enum(["payment.created", "payment.processing", "payment.completed", "payment.failed", "payment.reversed", "payment.approval_required", "payment.approved", "payment.denied", "deposit.pending", "deposit.credited", "wallet.frozen", "wallet.unfrozen"])
  .meta({ id: "WebhookEventType" });

export const AdminWebhookEndpoint = z
  .object({
    id: z.string(),
    project_id: z.string(),
    url: z.string(),
    events: z.array(WebhookEventType).nullable().describe("The event types sent there; null: every type."),
    state: z.enum(["enabled", "disabled"]),
    disabled_at: isoTimestamp.nullable(),
    disabled_reason: z.string().nullable().describe("Why: `deleted`, or every delivery failing for days (then `enable` sends what is pending)."),
    failing_since: isoTimestamp.nullable().describe("The first failed attempt since the last delivered one; null while healthy."),
    created_at: isoTimestamp,
  })
  .meta({ id: "AdminWebhookEndpoint" });

export const CreatedAdminWebhookEndpoint = AdminWebhookEndpoint.extend({
  secret: z.string().describe("The Standard Webhooks signing secret (whsec_…), shown this once; stored encrypted."),
}).meta({ id: "CreatedAdminWebhookEndpoint" });

export const AdminWebhookEndpointList = z.object({ data: z.array(AdminWebhookEndpoint) }).meta({ id: "AdminWebhookEndpointList" });

export const CreateWebhookEndpointRequest = z
  .object({
    url: z.string().min(1).max(2048).describe("https in live mode (public hosts only); the sandbox also takes http://127.0.0.1:PORT/…"),
    events: z.array(WebhookEventType).min(1).max(8).optional().describe("Only these event types; every type without it."),
  })
  .strict()
  .meta({ id: "CreateWebhookEndpointRequest" });

export const AdminWebhookDeleted = z.object({ id: z.string(), deleted: z.literal(true) }).meta({ id: "AdminWebhookDeleted" });

export const AdminWebhookDelivery = z
  .object({
    event_id: z.string().describe("The `webhook-id` the receiver sees."),
    type: WebhookEventType,
    object_id: z.string().describe("The transaction the event is about."),
    occurred_at: isoTimestamp,
    state: z.enum(["pending", "delivered", "failed"]).describe("failed: every attempt failed; `redeliver` starts again."),
    attempts: z.number().int().nonnegative(),
    next_attempt_at: isoTimestamp,
    last_attempt_at: isoTimestamp.nullable(),
    last_status: z.number().int().nullable().describe("The receiver's last HTTP status; null when it never answered."),
    last_error: z.string().nullable(),
    delivered_at: isoTimestamp.nullable(),
  })
  .meta({ id: "AdminWebhookDelivery" });

export const AdminWebhookDeliveryList = z.object({ data: z.array(AdminWebhookDelivery) }).meta({ id: "AdminWebhookDeliveryList" });

export const AdminWebhookDeliveriesQuery = z.object({
  limit: z.coerce.number().int().min(1).max(1_000).optional().describe("At most this many, newest first; default 50, up to 1,000."),
});

export const AdminWebhookRedelivery = z
  .object({ event_id: z.string(), scheduled: z.number().int().nonnegative().describe("Deliveries to enabled endpoints scheduled now.") })
  .meta({ id: "AdminWebhookRedelivery" });
