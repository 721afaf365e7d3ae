/**
 * When a batch of work asked for during the event loop should run. Busy (the last batch started less
 * than QUIET_MS ago): at the end of the current turn, so everything read from the sockets in this turn
 * joins it. Quiet: at once (after the current callback's own microtasks), as nothing is likely to join
 * and waiting for the end of the turn would only add latency. The group commit, the token lookup and
 * PostgreSQL's batched calls (createCallBatcher below) all batch this way.
 */

/** Milliseconds since the last batch after which a path counts as quiet. */
export const QUIET_MS = 2;

/** Schedules `flush` by the rule above; `lastFlushAt` is `performance.now()` when the last batch started. */
export function scheduleFlush(lastFlushAt: number, flush: () => void, quietMs = QUIET_MS): void {
  if (performance.now() - lastFlushAt > quietMs) queueMicrotask(flush);
  else setImmediate(flush);
}

/**
 * Requests that travel together as one atomic call (PostgreSQL's batch functions: pgHolds.ts,
 * pgResolves.ts). Requests asked for under one key are gathered by the rule above and sent in one
 * `call`, at most `max` at a time, with one call in flight per key: requests asked for while it runs
 * go in the next one. `call` answers one output per input, in order. A call that fails changed
 * nothing, so when it carried several requests each is sent again alone and every failure stays its
 * own request's.
 */
export function createCallBatcher<K, In, Out>(call: (key: K, inputs: In[]) => Promise<Out[]>, max: number): (key: K, input: In) => Promise<Out> {
  type Item = { input: In; resolve(o: Out): void; reject(err: unknown): void };
  const waiting = new Map<K, Item[]>();
  const running = new Set<K>();
  let scheduled = false;
  let lastFlushAt = Number.NEGATIVE_INFINITY;

  async function run(key: K, items: Item[]): Promise<void> {
    let outputs: Out[];
    try {
      outputs = await call(key, items.map((i) => i.input));
    } catch (err) {
      if (items.length === 1) return items[0]!.reject(err);
      return void (await Promise.all(items.map((i) => call(key, [i.input]).then((o) => i.resolve(o[0]!), i.reject))));
    }
    items.forEach((item, n) => item.resolve(outputs[n]!));
  }

  /** Starts the key's next call with what waits for it; when it ends, the next one. */
  function start(key: K): void {
    const items = waiting.get(key);
    if (!items || running.has(key)) return;
    const batch = items.splice(0, max);
    if (items.length === 0) waiting.delete(key);
    running.add(key);
    void run(key, batch)
      .catch((err) => batch.forEach((i) => i.reject(err)))
      .finally(() => {
        running.delete(key);
        start(key);
      });
  }

  function flush(): void {
    lastFlushAt = performance.now();
    scheduled = false;
    for (const key of [...waiting.keys()]) start(key);
  }

  return (key, input) =>
    new Promise<Out>((resolve, reject) => {
      let items = waiting.get(key);
      if (!items) waiting.set(key, (items = []));
      items.push({ input, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        scheduleFlush(lastFlushAt, flush);
      }
    });
}
