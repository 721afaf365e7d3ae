// Expected failures of the SSRF-safe fetcher, as one error class with stable snake_case codes.
//
// The message is the `detail` an API caller sees, so it names the host, the limit or the reason and what
// to change, and never contains request header values, the request body, or the URL's path and query
// (those can carry the caller's credentials for the target).
//
// | code                 | meaning                                                          | how to fix                         |
// |----------------------|------------------------------------------------------------------|------------------------------------|
// | `url_invalid`        | not a URL, too long, no host, or carries user:password@          | send an absolute https URL         |
// | `scheme_not_allowed` | scheme is not https (or http where the service allows it)       | use https://                       |
// | `host_not_allowed`   | the host is, or resolves to, a non-public address               | target a public internet host      |
// | `dns_failed`         | the host name did not resolve                                    | check the host name                |
// | `timeout`            | DNS + connect + headers + body took longer than the deadline    | retry later; target is too slow    |
// | `response_too_large` | the response body is larger than the cap                        | request a smaller resource         |
// | `connect_failed`     | the connection failed, or broke before a full response arrived   | check the target is reachable      |
// | `request_invalid`    | bad method, header or body (forbidden, malformed or over limit) | fix the request as the detail says |

/** Every code the fetcher can fail with; stable, part of the API. */
export const SAFE_FETCH_ERROR_CODES = [
  "url_invalid",
  "scheme_not_allowed",
  "host_not_allowed",
  "dns_failed",
  "timeout",
  "response_too_large",
  "connect_failed",
  "request_invalid",
] as const;

export type SafeFetchErrorCode = (typeof SAFE_FETCH_ERROR_CODES)[number];

export type SafeFetchErrorOptions = {
  /**
   * Whether bytes of the request may have reached the target. False for every failure raised before a
   * connection was established, true from the moment a socket to the target connected. The payment layer
   * needs this: a paid retry that failed after sending may still be settled by the merchant.
   */
  readonly requestMayHaveBeenSent?: boolean;
  /** The response status when the failure came after the response head (e.g. `response_too_large`). */
  readonly status?: number;
  readonly cause?: unknown;
};

export class SafeFetchError extends Error {
  override readonly name = "SafeFetchError";
  readonly code: SafeFetchErrorCode;
  readonly requestMayHaveBeenSent: boolean;
  readonly status: number | undefined;

  constructor(code: SafeFetchErrorCode, detail: string, options: SafeFetchErrorOptions = {}) {
    super(detail, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.requestMayHaveBeenSent = options.requestMayHaveBeenSent ?? false;
    this.status = options.status;
  }

  /** The API error body for this failure. */
  toJSON(): { detail: string; code: SafeFetchErrorCode } {
    return { detail: this.message, code: this.code };
  }
}

export function isSafeFetchError(value: unknown): value is SafeFetchError {
  return value instanceof SafeFetchError;
}
