/**
 * Turns whatever an API call threw into a tool result the model can act on: the API's `detail`, the HTTP
 * status, and the next step (fund the wallet, raise `max_amount_usdc`, wait for the rate limit, retry with
 * the same idempotency key…). The token is scrubbed from every message, whatever produced it.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { WalletApiError } from "@agentwallet/api";
import { toolFailure, type ToolContext } from "./tool.ts";

export type FailureContext = {
  /** `payment` failures may have moved money; their advice differs from a failed read. */
  kind: "read" | "payment";
  /** The key the payment was sent with, so a retry can reuse it. */
  idempotencyKey?: string | undefined;
};

/** How long to wait after a 429 that came without `Retry-After` (the limit is per minute). */
const rateLimitWaitSecondsDefault = 60;

export function apiFailure(error: unknown, ctx: ToolContext, failure: FailureContext): CallToolResult {
  const { headline, next } = explain(error, ctx, failure);
  return toolFailure(redact(`${headline}\nNext: ${next}`, ctx.config.token));
}

function explain(error: unknown, ctx: ToolContext, failure: FailureContext): { headline: string; next: string } {
  const retrySameKey = failure.idempotencyKey
    ? `retry with idempotency_key "${failure.idempotencyKey}" (the same key can never pay twice)`
    : "retry";
  if (error instanceof WalletApiError) {
    return { headline: `HTTP ${error.status}: ${error.detail}`, next: nextStep(error, ctx, failure, retrySameKey) };
  }
  if (isTimeout(error)) {
    const seconds = Math.round(ctx.config.requestTimeoutMs / 1000);
    return failure.kind === "payment"
      ? {
          headline: `No answer from the Agent Wallet API within ${seconds} s: the payment may or may not have been made.`,
          next: `call list_transactions to see whether it went through, or ${retrySameKey}.`,
        }
      : { headline: `No answer from the Agent Wallet API within ${seconds} s.`, next: "retry in a moment." };
  }
  if (error instanceof TypeError && error.message === "fetch failed") {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    return {
      headline: `Could not reach the Agent Wallet API at ${ctx.config.baseUrl} (${cause?.code ?? cause?.message ?? "network error"}).`,
      next:
        "check that the service is running and that AGENTWALLET_BASE_URL points at it (the user configures this)" +
        (failure.kind === "payment" ? `; then ${retrySameKey}.` : "."),
    };
  }
  if (isZodError(error)) {
    // The API answered 2xx with a body that does not match the contract: a version mismatch, not a user error.
    return {
      headline: `The Agent Wallet API answered with an unexpected shape: ${error.message.slice(0, 500)}`,
      next:
        "tell the user the MCP server and the API versions do not match" +
        (failure.kind === "payment" ? "; the payment may have been made, check list_transactions before retrying." : "."),
    };
  }
  return {
    headline: `Unexpected error: ${error instanceof Error ? error.message : String(error)}`,
    next: failure.kind === "payment" ? `check list_transactions, then ${retrySameKey}.` : "retry once; report it if it persists.",
  };
}

function nextStep(error: WalletApiError, ctx: ToolContext, failure: FailureContext, retrySameKey: string): string {
  const { status, detail, code = "" } = error;
  if (status === 400) {
    if (code === "insufficient_balance" || /insufficient balance/i.test(detail)) {
      return (
        "fund the wallet: call get_usdc_deposit_address and have USDC on Base sent to it (get_balance shows what is " +
        "available; the fee is charged on top of the amount), or pay a smaller amount."
      );
    }
    if (/max_amount_usdc/i.test(code) || /max_amount_usdc/i.test(detail)) {
      return (
        "the target asks more than max_amount_usdc allows; if the user accepts that price, call again with a higher " +
        "max_amount_usdc (micro-USDC: 1 USDC = 1,000,000)."
      );
    }
    return "correct the arguments the message names and call again.";
  }
  if (status === 401) {
    return (
      "the API token was refused (missing, unknown or revoked). The user must set AGENTWALLET_API_TOKEN to a valid " +
      "token in this MCP server's configuration; retrying will not help."
    );
  }
  if (status === 403 && ["spending_limit_exceeded", "recipient_not_allowed", "rail_not_allowed", "approval_required"].includes(code)) {
    return (
      "a spending control of this token refused the payment, as the message says; nothing was paid. Pay within it " +
      "(get_spending_limits shows what remains), wait for the next window, or ask the user to change the limits; " +
      "retrying the same payment will not help."
    );
  }
  if (status === 403 && ["token_wider_than_parent", "delegation_depth_exceeded", "child_tokens_limit"].includes(code)) {
    return "no token was created. Do what the message says (narrow the field it names, leave delegate out, or revoke a child first), then call again.";
  }
  if (status === 403) {
    return (
      "this token does not allow the operation (payments need the `pay` permission, URL recipients `x402` as well) or " +
      "the project is paused. Ask the user for a token with that permission; retrying will not help."
    );
  }
  if (status === 404) {
    return `check that AGENTWALLET_BASE_URL (${ctx.config.baseUrl}) points at an Agent Wallet API.`;
  }
  if (status === 409) {
    return `a request with the same idempotency key is still in progress: wait a few seconds, then ${retrySameKey}.`;
  }
  if (status === 429) {
    const retryAfter = Number(error.headers.get("retry-after"));
    const seconds = Number.isFinite(retryAfter) && retryAfter > 0 ? Math.ceil(retryAfter) : rateLimitWaitSecondsDefault;
    return `rate limit reached (100 requests per minute per token): wait ${seconds} s before calling again.`;
  }
  if (status === 502) {
    return failure.kind === "payment"
      ? `an upstream (payment provider, target API or x402 facilitator) failed; a failed payment is credited back automatically. Check list_transactions, then ${retrySameKey}.`
      : "an upstream service failed: retry in a moment.";
  }
  return failure.kind === "payment"
    ? `the service failed; call list_transactions to see whether the payment went through, then ${retrySameKey}.`
    : "the service failed: retry in a moment.";
}

function isTimeout(error: unknown): boolean {
  return error instanceof Error && (error.name === "TimeoutError" || error.name === "AbortError");
}

function isZodError(error: unknown): error is Error {
  return error instanceof Error && (error.name === "ZodError" || error.name === "$ZodError");
}

/** Defence in depth: nothing above formats the token, but a detail or cause echoing it must not reach the model. */
export function redact(text: string, token: string): string {
  return token ? text.split(token).join("[redacted]") : text;
}
