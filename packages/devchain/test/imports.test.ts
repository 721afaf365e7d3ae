import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, test } from "vitest";

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), "devchain-imports-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// The sandbox imports this package at every start and in every CLI command that reaches its chain, through tsx,
// module by module: what only the v1 and MPP merchants need (every chain viem defines, viem's Tempo chains, some
// 1,800 modules) is loaded by those merchants alone.
test("importing the package loads neither x402 v1's middleware nor mppx's server, nor the chains they bring", async () => {
  const hook = join(dir, "hook.mjs");
  writeFileSync(hook, `export async function resolve(specifier, context, next) { process._rawDebug("resolve " + specifier); return next(specifier, context); }`);
  const register = join(dir, "register.mjs");
  writeFileSync(register, `import { register } from "node:module"; register(${JSON.stringify(`file://${hook}`)});`);
  const entry = resolve(import.meta.dirname, "../src/index.ts");
  const { stderr } = await run(process.execPath, ["--import", register, "--import", "tsx", "-e", `const m = await import(${JSON.stringify(`file://${entry}`)}); if (typeof m.startMerchantV1 !== "function") process.exit(3);`], { cwd: resolve(import.meta.dirname, ".."), timeout: 60_000 });
  const resolved = stderr.split("\n").filter((l) => l.startsWith("resolve ")).map((l) => l.slice("resolve ".length));
  expect(resolved).toContain("viem");
  expect(resolved.filter((s) => /^(x402-express|x402|mppx\/server)(\/|$)|^viem\/(chains|tempo|zksync)(\/|$)/.test(s))).toEqual([]);
});
