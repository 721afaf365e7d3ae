import type { ErrorCode } from "../domain/errorCodes.ts";

/**
 * A failure that only exists on the wire: an HTTP status plus headers the client acts on (429
 * rate_limited with Retry-After). Everything a service or rail can refuse is a DomainError instead.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: ErrorCode,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

/** The body of every error answer: `detail` for people, `code` for programs (docs/errors.md). */
export function errorBody(code: ErrorCode, detail: string): { detail: string; code: ErrorCode } {
  return { detail, code };
}
