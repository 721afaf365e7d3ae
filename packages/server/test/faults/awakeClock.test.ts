import { describe, expect, it } from "vitest";
import { startAwakeClock } from "./support/awakeClock.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Holds this process's one thread, as a stall of the machine holds every process. */
function stall(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    /* busy */
  }
}

describe("the fault scenarios' awake clock", () => {
  it("does not count a stall against a wait, and still ends the wait once the time has run", async () => {
    const clock = startAwakeClock();
    try {
      const over = clock.within(2_500);
      await sleep(100);
      stall(3_000);
      await sleep(100);
      // 3.2 s of wall time, so a wall-clock wait of 2.5 s would be over; awake, about 1.2 s (the stall counted as one),
      // with room for timers a busy machine fires late (each counted as it came, up to a second).
      expect(over()).toBe(false);
      await sleep(1_600);
      expect(over()).toBe(true);
    } finally {
      clock.stop();
    }
  });
});
