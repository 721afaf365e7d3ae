/**
 * Expected failures are values with a status and a stable code; the `detail` is API text that says
 * what happened and what to do. Anything else reaching the error handler is a server fault: 500 with
 * a generic detail, the cause logged and never echoed.
 */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    readonly code: string,
    readonly detail: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

export const badRequest = (code: string, detail: string) => new ApiError(400, code, detail);
export const unauthorized = (detail: string) => new ApiError(401, "unauthorized", detail);
export const forbidden = (code: string, detail: string) => new ApiError(403, code, detail);
export const conflict = (code: string, detail: string) => new ApiError(409, code, detail);
export const upstream = (code: string, detail: string) => new ApiError(502, code, detail);
export const notFound = (code: string, detail: string) => new ApiError(404, code, detail);

/** The kind of an expected failure raised below the HTTP layer; http/errorStatus.ts gives each its status. */
export type ErrorKind = "invalid" | "forbidden" | "conflict" | "upstream" | "unavailable";

/**
 * An expected failure of a rail, by kind and stable code: the rails know no HTTP status codes; the
 * HTTP layer maps the kind to one.
 */
export class DomainError extends Error {
  override name = "DomainError";
  constructor(
    readonly kind: ErrorKind,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}
