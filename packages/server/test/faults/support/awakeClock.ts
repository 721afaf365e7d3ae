/**
 * A clock for the fault scenarios' waits that counts only the time this process ran. When this process
 * stalls, the service stalls with it (the RPC proxy it talks to runs here), as it does when the whole
 * machine stalls; a wait measured on the wall clock can then run out while the service had no time to
 * catch up. It ticks every 100 ms and counts each tick up to a second, so a stall of any length counts
 * as one second.
 */
export type AwakeClock = {
  /** A wait of `ms` of awake time from now; answers whether it is over. */
  within(ms: number): () => boolean;
  stop(): void;
};

export function startAwakeClock(): AwakeClock {
  let awakeMs = 0;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    awakeMs += Math.min(now - last, 1_000);
    last = now;
  }, 100);
  timer.unref();
  return {
    within(ms) {
      const end = awakeMs + ms;
      return () => awakeMs > end;
    },
    stop: () => clearInterval(timer),
  };
}
