/**
 * When a batch of work asked for during the event loop should run. Busy (the last batch started less
 * than QUIET_MS ago): at the end of the current turn, so everything read from the sockets in this turn
 * joins it. Quiet: at once (after the current callback's own microtasks), as nothing is likely to join
 * and waiting for the end of the turn would only add latency. The group commit and the token lookup
 * both batch this way.
 */

/** Milliseconds since the last batch after which a path counts as quiet. */
export const QUIET_MS = 2;

/** Schedules `flush` by the rule above; `lastFlushAt` is `performance.now()` when the last batch started. */
export function scheduleFlush(lastFlushAt: number, flush: () => void, quietMs = QUIET_MS): void {
  if (performance.now() - lastFlushAt > quietMs) queueMicrotask(flush);
  else setImmediate(flush);
}
