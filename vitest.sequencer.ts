/**
 * Test files in the order that keeps both workers busy to the end. Without a results cache (a fresh
 * clone, as in CI) Vitest starts the largest files first; the fault suites take the longest to run and are
 * among the smallest files, so they started last and ran alone after everything else. They go first.
 */
import { BaseSequencer, type TestSpecification } from "vitest/node";

const LONGEST = /\/test\/faults\//;

export class LongestFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    return [...sorted.filter((f) => LONGEST.test(f.moduleId)), ...sorted.filter((f) => !LONGEST.test(f.moduleId))];
  }
}
