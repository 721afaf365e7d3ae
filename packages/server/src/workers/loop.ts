/**
 * A background loop: runs `fn` every `intervalMs`, one iteration at a time, logging (never throwing)
 * failures. `stop()` waits for the running iteration, so shutdown never cuts a step in half.
 */
import type { Logger } from "pino";

export type Loop = { stop(): Promise<void>; kick(): void };

export function startLoop(name: string, intervalMs: number, fn: () => Promise<unknown>, logger: Logger): Loop {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  const run = () => {
    timer = undefined;
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = fn()
      .then(
        () => undefined,
        (err) => {
          logger.warn({ err, loop: name }, "background loop iteration failed; retrying next interval");
        },
      )
      .finally(() => {
        running = undefined;
        if (stopped) return;
        const delay = again ? 0 : intervalMs;
        again = false;
        timer = setTimeout(run, delay);
      });
  };
  timer = setTimeout(run, 0);
  return {
    kick() {
      if (stopped) return;
      if (timer) {
        clearTimeout(timer);
        timer = setTimeout(run, 0);
      } else again = true;
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
  };
}
