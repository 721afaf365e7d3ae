/**
 * Test files in the order that keeps every worker busy to the end. Without a results cache (a fresh
 * clone, as in CI) Vitest orders files by size, so a long file could start last and run alone after
 * everything else. The files that take longest (measured: docs/performance.md, "The test suite") go
 * first, longest first; the rest follow in Vitest's order.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

const LONGEST = [
  "/test/faults/postgres.faults.test.ts",
  "/console/test/console.e2e.test.ts",
  "/test/faults/sqlite.faults.test.ts",
  "/test/sandbox.e2e.test.ts",
  "/test/deploy/productionShape.e2e.test.ts",
  "/test/delegation/nestedConcurrency.e2e.test.ts",
  "/test/fiat/bridgeCrash.test.ts",
  "/test/fiat/bankReturns.e2e.test.ts",
  "/test/pay/crash.test.ts",
  "/test/cli.test.ts",
  "/test/pay/feeOnReturn.e2e.test.ts",
  "/test/spending/concurrentLimit.e2e.test.ts",
  "/test/spending/holdLimits.test.ts",
  "/test/pay/concurrency.test.ts",
];

const rank = (f: TestSpecification) => {
  const i = LONGEST.findIndex((end) => f.moduleId.endsWith(end));
  return i === -1 ? LONGEST.length : i;
};

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: files outside the list keep Vitest's order.
    return sorted.map((f, i) => ({ f, i, r: rank(f) })).sort((a, b) => a.r - b.r || a.i - b.i).map((x) => x.f);
  }
}
