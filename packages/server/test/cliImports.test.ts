import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, expect, test } from "vitest";

const dir = mkdtempSync(join(tmpdir(), "aw-cli-imports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Every CLI command loads the CLI's static imports through tsx, module by module (a checkout runs its sources).
// The server's wiring (deps.ts) and the payment protocols' packages load with the commands that need them
// (`serve`, `fund`, …), not with `projects list` or `--help`; the keys commands derive come from masterKeys.ts.
test("the CLI's own imports leave out the payment protocols' packages and deps.ts", async () => {
  const loader = join(dir, "loader.mjs");
  writeFileSync(loader, "export async function resolve(s, c, next) { const r = await next(s, c); process._rawDebug(`loaded ${r.url}`); return r; }\n");
  const register = join(dir, "register.mjs");
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(loader).href)});\n`);
  const run = pathToFileURL(resolve(import.meta.dirname, "../src/cli/run.ts")).href;
  const { stderr } = await promisify(execFile)(process.execPath, ["--import", register, "--import", "tsx", "-e", `await import(${JSON.stringify(run)})`], { cwd: resolve(import.meta.dirname, ".."), timeout: 60_000 });
  const loaded = stderr.split("\n").filter((l) => l.startsWith("loaded ")).map((l) => l.slice("loaded ".length));
  expect(loaded.some((u) => u.endsWith("/src/cli/commands.ts"))).toBe(true);
  expect(loaded.filter((u) => /\/node_modules\/(mppx|@x402|x402)\/|\/src\/deps\.ts$/.test(u))).toEqual([]);
});
