/** The HTTP status of each kind of domain failure (domain/errors.ts); the layers below never name one. */
import type { DomainError, ErrorKind } from "../domain/errors.ts";

const STATUS: Readonly<Record<ErrorKind, number>> = {
  invalid: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  upstream: 502,
  unavailable: 503,
};

export function statusOf(err: DomainError): number {
  return STATUS[err.kind];
}
