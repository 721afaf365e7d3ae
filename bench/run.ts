/**
 * `npm run bench -- <suite> [flags]`: runs the suite in `bench/<suite>.ts`, which exports
 * `run(args: string[]): Promise<void>`. A suite is one file so suites can be added without
 * touching this dispatcher.
 */
import { existsSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { UsageError } from "./lib.ts";

const NOT_SUITES = new Set(["run.ts", "lib.ts"]);

function availableSuites(): string[] {
  const dir = fileURLToPath(new URL(".", import.meta.url));
  return readdirSync(dir)
    .filter((f) => f.endsWith(".ts") && !f.endsWith(".d.ts") && !NOT_SUITES.has(f))
    .map((f) => f.slice(0, -".ts".length))
    .sort();
}

function usage(problem: string): never {
  const suites = availableSuites();
  console.error(`${problem}\nUsage: npm run bench -- <suite> [flags]\nSuites: ${suites.length ? suites.join(", ") : "(none)"}`);
  process.exit(2);
}

async function main(): Promise<void> {
  const [suite, ...args] = process.argv.slice(2);
  if (!suite || suite.startsWith("-")) usage("Name a benchmark suite.");
  // The name becomes a file path: accept plain names only.
  if (!/^[a-z][a-z0-9-]*$/.test(suite) || NOT_SUITES.has(`${suite}.ts`) || !existsSync(new URL(`./${suite}.ts`, import.meta.url))) {
    usage(`Unknown benchmark suite "${suite}".`);
  }
  const mod = (await import(`./${suite}.ts`)) as { run?: (args: string[]) => Promise<void> };
  if (typeof mod.run !== "function") usage(`bench/${suite}.ts does not export run(args).`);
  await mod.run(args);
}

main().then(
  () => process.exit(0),
  (err) => {
    if (err instanceof UsageError) {
      console.error(err.message);
      process.exit(2);
    }
    console.error(err);
    process.exit(1);
  },
);
