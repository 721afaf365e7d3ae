/**
 * Every `code` an error answer of the API (and the admin CLI) can carry: one list, so a code is named once.
 * `DomainError`, the wire-only `ApiError` (http/apiError.ts) and the HTTP layer's own answers take an
 * `ErrorCode`, so a misspelt or new code fails the typecheck until it is added here; and
 * `test/errorCodes.test.ts` holds this list and the tables of `docs/errors.md` to each other, both ways.
 * The x402 rail's refusals are listed here too (the rail imports them); the SSRF-safe fetcher's own list
 * (net/safeFetchErrors.ts) is spelt out again below, and its throw sites pass its codes as an `ErrorCode`,
 * so the compiler checks that it stays a subset.
 * Failure codes of payments (`failure_code`, ledger/failureCodes.ts) are states of a payment, not errors.
 */
/** The x402 rail's refusals of a target's payment requirements, before anything is signed (400). */
export const X402_REFUSAL_CODES = [
  "x402_price_above_max",
  "x402_no_supported_requirement",
  "x402_asset_not_allowed",
  "x402_eip712_domain_invalid",
  "x402_transfer_method_unsupported",
  "x402_pay_to_invalid",
  "x402_pay_to_own_wallet",
  "x402_max_timeout_invalid",
  "x402_amount_invalid",
  "mpp_challenge_invalid",
] as const;

export const ERROR_CODES = [
  // invalid (400): the caller can fix the request.
  "invalid_request",
  "duplicate_json_key",
  "token_in_request",
  "malformed_http",
  "invalid_query",
  "invalid_recipient",
  "invalid_amount",
  "unsupported_chain",
  "recipient_not_allowed",
  "insufficient_balance",
  "already_revoked",
  "invalid_webhook",
  "webhook_stale",
  "webhook_url_invalid",
  "webhook_events_invalid",
  "webhook_endpoints_limit",
  "quote_mismatch",
  // x402: the refusals above, then the target's own fault (502).
  ...X402_REFUSAL_CODES,
  "x402_payment_required_invalid",
  // The SSRF-safe fetcher's codes (net/safeFetchErrors.ts), passed through: 400 or 502.
  "url_invalid",
  "scheme_not_allowed",
  "host_not_allowed",
  "request_invalid",
  "dns_failed",
  "timeout",
  "connect_failed",
  "response_too_large",
  // The facilitator's discovery catalogue failed (502).
  "discovery_failed",
  // unauthorized (401) and forbidden (403).
  "unauthorized",
  "admin_credential_required",
  "admin_role_insufficient",
  "project_token_required",
  "permission_denied",
  "spending_limit_exceeded",
  "rail_not_allowed",
  "approval_required",
  "project_paused",
  "wallet_frozen",
  "token_wider_than_parent",
  "delegation_depth_exceeded",
  "child_tokens_limit",
  // not_found (404).
  "not_found",
  "project_not_found",
  "token_not_found",
  "payment_not_found",
  "transaction_not_found",
  "admin_credential_not_found",
  "webhook_endpoint_not_found",
  "webhook_event_not_found",
  "quote_not_found",
  // conflict (409).
  "idempotency_in_flight",
  "idempotency_key_reused",
  "not_awaiting_approval",
  "payment_final",
  "rail_state_readable",
  "webhook_replayed",
  "quote_expired",
  "quote_changed",
  // Answered by the HTTP layer itself (http/app.ts, http/auth.ts): 408, 415, 429, 431, 500, 503.
  "request_timeout",
  "unsupported_media_type",
  "rate_limited",
  "headers_too_large",
  "internal_error",
  "shutting_down",
  "not_ready",
  "service_busy",
  // The console's answer to a JSON caller for any other refusal or fault (packages/console).
  "console_error",
  // unavailable (503).
  "rail_unavailable",
  "chain_unavailable",
  "fiat_unavailable",
  "webhook_not_configured",
  "webhook_key_unavailable",
  "discovery_unavailable",
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];
