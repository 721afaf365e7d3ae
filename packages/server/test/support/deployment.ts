/** New deployments for the operator commands' tests (`init`, `doctor`): a data directory and a database each, and the CLI run in this process. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "../../src/cli/run.ts";
import { createPgSchema, type TestDialect } from "./db.ts";

export type CliOutcome = { code: number; stdout: string; stderr: string };

/** One command line in this process, with `env` over this process's environment. */
export async function runCommand(args: string[], env: NodeJS.ProcessEnv): Promise<CliOutcome> {
  const out = { stdout: "", stderr: "" };
  const code = await runCli(args, { env: { ...process.env, ...env }, stdout: { write: (s: string) => (out.stdout += s) }, stderr: { write: (s: string) => (out.stderr += s) } });
  return { code, ...out };
}

/** Makes deployments' places (a temporary directory; on PostgreSQL a schema of its own) and removes them all at `removeAll`. */
export function deploymentPlaces(prefix: string) {
  const dirs: string[] = [];
  const drops: (() => Promise<void>)[] = [];
  return {
    async create(dialect: TestDialect): Promise<{ dir: string; databaseUrl: string }> {
      const dir = mkdtempSync(join(tmpdir(), prefix));
      dirs.push(dir);
      if (dialect === "sqlite") return { dir, databaseUrl: "" };
      const s = await createPgSchema();
      drops.push(s.drop);
      return { dir, databaseUrl: s.url };
    },
    async removeAll(): Promise<void> {
      for (const d of drops) await d();
      for (const d of dirs) rmSync(d, { recursive: true, force: true });
    },
  };
}
