/**
 * Configuration of the tool server: environment variables → `McpConfig`, and every limit of this package
 * named once with its default and why. Parsing fails fast with a message that names the variable.
 */
import { usdToMicrosCeil } from "./money.ts";

/** Replaced at build time (`AGENTWALLET_PUBLIC_BASE_URL=… npm run build`); absent when run from source. */
declare const __AGENTWALLET_DEFAULT_BASE_URL__: string | undefined;

/**
 * The base address used when `AGENTWALLET_BASE_URL` is not set: the deployment's public address baked into
 * the bundle, or the local sandbox (`npm start`) when none was given at build time.
 */
export const defaultBaseUrl: string =
  typeof __AGENTWALLET_DEFAULT_BASE_URL__ === "string" && __AGENTWALLET_DEFAULT_BASE_URL__
    ? __AGENTWALLET_DEFAULT_BASE_URL__
    : "http://127.0.0.1:8787";

export const mcpLimits = {
  /**
   * Deadline of every API call. Below the 60 s request timeout most MCP clients use, so the model reads our
   * message (with the idempotency key to retry with) instead of a bare client-side timeout.
   */
  requestTimeoutMsDefault: 45_000,
  requestTimeoutMsMin: 1_000,
  requestTimeoutMsMax: 600_000,
  /** Payments above this ask the user to confirm, when the client supports elicitation. */
  confirmAboveUsdDefault: "10",
  /** How long a confirmation dialog may stay open; the user is a human, so minutes, but never forever. */
  confirmationTimeoutMs: 5 * 60_000,
  /**
   * A payment tool call without an idempotency key reuses the key derived for identical arguments within
   * this window, so a retried call cannot pay twice. Longer than any client retry after a timeout; short
   * enough that a deliberate repeat later (say, polling a paid API) is a new payment.
   */
  autoIdempotencyWindowMs: 10 * 60_000,
  /** Bound on remembered auto keys; the oldest are dropped first (they are past the window anyway). */
  autoIdempotencyEntriesMax: 10_000,
  /** Streamable HTTP: concurrent sessions, and how long an idle one is kept. */
  httpSessionsMax: 64,
  httpSessionIdleMs: 30 * 60_000,
} as const;

export type McpConfig = {
  /** Bearer token for the API; never logged, never returned to the model. */
  token: string;
  baseUrl: string;
  /** Register only the read tools. */
  readOnly: boolean;
  /** Per-call cap on payment tools, micro-USD; undefined = no cap beyond the API's own limits. */
  maxPaymentMicros: number | undefined;
  /** Payments above this (micro-USD) ask for confirmation when the client supports elicitation. */
  confirmAboveMicros: number;
  requestTimeoutMs: number;
};

export class ConfigError extends Error {
  override name = "ConfigError";
}

type Env = Record<string, string | undefined>;

export function loadConfig(env: Env): McpConfig {
  const token = env.AGENTWALLET_API_TOKEN?.trim();
  if (!token) {
    throw new ConfigError(
      "AGENTWALLET_API_TOKEN is not set. Set it to an Agent Wallet API token (aw_live_… or aw_test_…); " +
        "the tools act with that token's permissions (read, pay, x402).",
    );
  }
  return {
    token,
    baseUrl: parseBaseUrl(env.AGENTWALLET_BASE_URL),
    readOnly: parseFlag("AGENTWALLET_READ_ONLY", env.AGENTWALLET_READ_ONLY),
    maxPaymentMicros: parseUsd("AGENTWALLET_MAX_PAYMENT_USD", env.AGENTWALLET_MAX_PAYMENT_USD, { positive: true }),
    confirmAboveMicros:
      parseUsd("AGENTWALLET_CONFIRM_ABOVE_USD", env.AGENTWALLET_CONFIRM_ABOVE_USD ?? mcpLimits.confirmAboveUsdDefault, {
        positive: false,
      }) ?? 0,
    requestTimeoutMs: parseTimeout(env.AGENTWALLET_TIMEOUT_MS),
  };
}

function parseBaseUrl(value: string | undefined): string {
  const text = value?.trim() || defaultBaseUrl;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ConfigError(`AGENTWALLET_BASE_URL is not a URL: ${JSON.stringify(text)}.`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ConfigError(`AGENTWALLET_BASE_URL must be an http(s) URL, got ${JSON.stringify(text)}.`);
  }
  return text.replace(/\/+$/, "");
}

function parseFlag(name: string, value: string | undefined): boolean {
  const text = value?.trim().toLowerCase() ?? "";
  if (text === "" || text === "0" || text === "false" || text === "no") return false;
  if (text === "1" || text === "true" || text === "yes") return true;
  throw new ConfigError(`${name} must be 1 or 0 (true/false), got ${JSON.stringify(value)}.`);
}

function parseUsd(name: string, value: string | undefined, opts: { positive: boolean }): number | undefined {
  if (value === undefined || value.trim() === "") return undefined;
  const micros = usdToMicrosCeil(value.trim().replace(/^\$/, ""));
  if (micros === undefined || !Number.isFinite(micros) || (opts.positive && micros <= 0)) {
    throw new ConfigError(
      `${name} must be a ${opts.positive ? "positive " : ""}amount in US dollars such as 25 or 2.50, got ${JSON.stringify(value)}.`,
    );
  }
  return micros;
}

function parseTimeout(value: string | undefined): number {
  if (value === undefined || value.trim() === "") return mcpLimits.requestTimeoutMsDefault;
  const ms = Number(value);
  if (!Number.isInteger(ms) || ms < mcpLimits.requestTimeoutMsMin || ms > mcpLimits.requestTimeoutMsMax) {
    throw new ConfigError(
      `AGENTWALLET_TIMEOUT_MS must be a whole number of milliseconds from ${mcpLimits.requestTimeoutMsMin} ` +
        `to ${mcpLimits.requestTimeoutMsMax}, got ${JSON.stringify(value)}.`,
    );
  }
  return ms;
}
