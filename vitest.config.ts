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
    // Two files at once on the two cores: with three, files that start servers and chains starve the settlement
    // thread each server runs at a lower priority (settlement/settlement.ts) for minutes, and its start-up times out.
    maxWorkers: 2,
    sequence: { sequencer: LongestFirstSequencer },
    reporters: ["default", "./vitest.summary.ts"],
  },
});
