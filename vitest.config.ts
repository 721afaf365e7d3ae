import { defineConfig } from "vitest/config";
import { LongestFirstSequencer } from "./vitest.sequencer.ts";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "packages/*/src/**/*.test.ts"],
    globalSetup: ["packages/server/test/support/globalSetup.ts"],
    // Chain, database and end-to-end tests start real processes; give them room, never retry them.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // A worker keeps its modules from one file to the next: re-importing the service for each of ~140 files
    // cost 420 s of the run's 1,475 s. Files share nothing else: each opens its own database, chain and server.
    isolate: false,
    // Three files at once on the two cores: most files wait on chains, servers and browsers more than they
    // compute, and with two the cores stood idle half the run (1,475 s); with three they are busy 93 % of it
    // (552 s). A settlement thread loads at its process's priority before it lowers itself (settlement.ts),
    // which is what starved start-ups when three ran before.
    maxWorkers: 3,
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ["default", "./vitest.summary.ts"],
  },
});
