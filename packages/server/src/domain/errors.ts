/**
 * Expected failures below the HTTP layer are values with a kind and a stable code; the `detail` is API
 * text that says what happened and what to do. Only http/errorStatus.ts knows which HTTP status each
 * kind becomes, so services, rails and the CLI raise and catch the same error without naming one.
 * Anything else reaching the error handler is a server fault: 500 with a generic detail, the cause
 * logged and never echoed; but for the database at capacity, which the ledger names (ledger/overload.ts): 503. Codes are one union (domain/errorCodes.ts), so a misspelt one fails the typecheck.
 */
import type { ErrorCode } from "./errorCodes.ts";

export type ErrorKind = "invalid" | "unauthorized" | "forbidden" | "not_found" | "conflict" | "upstream" | "unavailable";

export class DomainError extends Error {
  override name = "DomainError";
  constructor(
    readonly kind: ErrorKind,
    readonly code: ErrorCode,
    readonly detail: string,
    /** Fields the answer carries beside `detail` and `code` (e.g. a changed quote's terms, both sides). */
    readonly extra?: Readonly<Record<string, unknown>>,
  ) {
    super(detail);
  }
}

export const badRequest = (code: ErrorCode, detail: string) => new DomainError("invalid", code, detail);
export const unauthorized = (detail: string) => new DomainError("unauthorized", "unauthorized", detail);
export const forbidden = (code: ErrorCode, detail: string) => new DomainError("forbidden", code, detail);
export const notFound = (code: ErrorCode, detail: string) => new DomainError("not_found", code, detail);
export const conflict = (code: ErrorCode, detail: string, extra?: Record<string, unknown>) => new DomainError("conflict", code, detail, extra);
export const upstream = (code: ErrorCode, detail: string) => new DomainError("upstream", code, detail);
export const unavailable = (code: ErrorCode, detail: string) => new DomainError("unavailable", code, detail);
