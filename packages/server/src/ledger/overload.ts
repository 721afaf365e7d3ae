/**
 * The database at capacity, as its drivers report it: an overload a request can be told is temporary, and safe
 * to send again with the same idempotency key, because the statement or transaction that met it did nothing.
 * - `pool_exhausted` (PostgreSQL): no connection of the pool came free, and no new one connected, within
 *   DATABASE_POOL_WAIT_MS (pg-pool's two messages: the wait in its queue, a new connection's connect).
 * - `connections_refused` (PostgreSQL): the server refused another connection (53300 too_many_connections: its
 *   max_connections, or the role's or the database's connection limit).
 * - `write_locked` (SQLite): another connection held the write lock past SQLITE_BUSY_TIMEOUT_MS (SQLITE_BUSY and
 *   its extended codes).
 * Each is met before anything was written: a PostgreSQL statement needs its connection first, and a SQLite write
 * that cannot take the lock changes nothing, its transaction rolled back whole. Earlier writes of the same
 * request stand; the idempotency key answers them (services/payments/idempotency.ts).
 */
export type StoreOverload = "pool_exhausted" | "connections_refused" | "write_locked";

const POOL_MESSAGES: ReadonlySet<string> = new Set(["timeout exceeded when trying to connect", "Connection terminated due to connection timeout"]);

/** Causes looked through: an error wrapped this deep is not one the ledger's callers made. */
const CAUSE_DEPTH_MAX = 4;

export function storeOverloadOf(err: unknown): StoreOverload | undefined {
  let e: unknown = err;
  for (let depth = 0; depth <= CAUSE_DEPTH_MAX && e instanceof Error; depth++, e = e.cause) {
    const code = (e as { code?: unknown }).code;
    if (code === "53300") return "connections_refused";
    if (typeof code === "string" && code.startsWith("SQLITE_BUSY")) return "write_locked";
    if (POOL_MESSAGES.has(e.message)) return "pool_exhausted";
  }
  return undefined;
}
