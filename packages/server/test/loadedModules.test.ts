import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";

// A checkout loads its sources through tsx, module by module, so what a start or a CLI command imports costs it
// whether or not it runs it (decisions.md, "The sandbox and the CLI load only what they run").
const dir = mkdtempSync(join(tmpdir(), "aw-loaded-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const server = resolve(import.meta.dirname, "..");

/** The URL of every module a fresh `node --import tsx` process loads to import `specifier` (resolved from the server package). */
async function modulesLoadedBy(specifier: string): Promise<string[]> {
  const loader = join(dir, "loader.mjs");
  writeFileSync(loader, "export async function resolve(s, c, next) { const r = await next(s, c); process._rawDebug(`loaded ${r.url}`); return r; }\n");
  const register = join(dir, "register.mjs");
  writeFileSync(register, `import { register } from "node:module";\nregister(${JSON.stringify(pathToFileURL(loader).href)});\n`);
  const { stderr } = await promisify(execFile)(process.execPath, ["--import", register, "--import", "tsx", "-e", `await import(${JSON.stringify(specifier)})`], { cwd: server, timeout: 60_000 });
  return stderr.split("\n").filter((l) => l.startsWith("loaded ")).map((l) => l.slice("loaded ".length));
}

describe("modules loaded only by what runs them", () => {
  test("the CLI's own imports leave out deps.ts and the payment protocols' packages (they load with serve, fund, …)", async () => {
    const loaded = await modulesLoadedBy(pathToFileURL(join(server, "src/cli/run.ts")).href);
    expect(loaded.some((u) => u.endsWith("/src/cli/commands.ts"))).toBe(true);
    expect(loaded.filter((u) => /\/node_modules\/(mppx|@x402|x402)\/|\/src\/deps\.ts$/.test(u))).toEqual([]);
  });

  test("the sandbox's chain package leaves out the x402 v1 and MPP merchants' packages and the chains they bring", async () => {
    const loaded = await modulesLoadedBy("@agentwallet/devchain");
    expect(loaded.some((u) => u.includes("/node_modules/@x402/express/"))).toBe(true);
    expect(loaded.filter((u) => /\/node_modules\/(x402|x402-express)\/|\/node_modules\/mppx\/dist\/(server|tempo)\/|\/viem\/_esm\/(chains|tempo|zksync)\//.test(u))).toEqual([]);
  });
});
