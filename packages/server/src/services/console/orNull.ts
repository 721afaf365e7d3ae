/**
 * The console's port answers null for a thing that is not there, where the API's and the admin API's service
 * functions, which it reuses, refuse with a `not_found` domain error: this turns one into the other and lets
 * every other error through.
 */
import { DomainError } from "../../domain/errors.ts";

export async function orNull<T>(read: Promise<T>): Promise<T | null> {
  try {
    return await read;
  } catch (err) {
    if (err instanceof DomainError && err.kind === "not_found") return null;
    throw err;
  }
}
