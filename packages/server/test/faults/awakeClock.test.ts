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
      const over = clock.within(1_500);
      await sleep(250);
      stall(3_000);
      await sleep(250);
      // 3.5 s of wall time: a wall-clock wait of 1.5 s would be over.
      expect(over()).toBe(false);
      await sleep(1_500);
      expect(over()).toBe(true);
    } finally {
      clock.stop();
    }
  });
});
