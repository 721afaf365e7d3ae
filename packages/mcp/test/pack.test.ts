/**
 * The published shape: `npm pack` (which builds the bundle in `prepack`) gives a tarball that installs on its
 * own, and `npx agentwallet-mcp` from that install answers `initialize` over stdio.
 */
import { spawn } from "node:child_process";
import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, expect, test } from "vitest";
import { cleanEnv, fakeToken, packageDir, run } from "./helpers.ts";

const npmTimeoutMs = 120_000;
let workDir: string;

beforeAll(async () => {
  workDir = await mkdtemp(join(tmpdir(), "agentwallet-mcp-pack-"));
});
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

test("behavior: the packed tarball installs and `npx agentwallet-mcp` answers initialize", { timeout: 4 * npmTimeoutMs }, async () => {
  const packed = await run("npm", ["pack", "--pack-destination", workDir], { cwd: packageDir, timeoutMs: npmTimeoutMs });
  expect(packed.code, packed.stderr).toBe(0);
  const tarball = (await readdir(workDir)).find((name) => name.endsWith(".tgz"));
  expect(tarball).toBe("agentwallet-mcp-0.1.0.tgz");
  expect(packed.stderr).toContain("dist/agentwallet-mcp.js");
  expect(packed.stderr).not.toMatch(/\ssrc\//);

  const project = join(workDir, "project");
  await mkdir(project);
  await writeFile(join(project, "package.json"), JSON.stringify({ name: "pack-check", private: true, type: "module" }));
  // --prefer-offline: from the local npm cache when it has everything (it does after `npm install` here),
  // from the registry otherwise.
  const installed = await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", join(workDir, tarball ?? "")],
    { cwd: project, timeoutMs: npmTimeoutMs },
  );
  expect(installed.code, installed.stderr).toBe(0);

  const reply = await initializeOverStdio(project);
  expect(reply).toMatchObject({
    jsonrpc: "2.0",
    id: 1,
    result: { serverInfo: { name: "agentwallet", version: "0.1.0" }, capabilities: { tools: {} } },
  });
});

/** Starts `npx agentwallet-mcp` in `cwd`, sends one initialize request and returns the first reply line. */
function initializeOverStdio(cwd: string): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const child = spawn("npx", ["--no-install", "agentwallet-mcp"], {
      cwd,
      env: cleanEnv({ AGENTWALLET_API_TOKEN: fakeToken, AGENTWALLET_BASE_URL: "http://127.0.0.1:9" }),
      stdio: "pipe",
    });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`no initialize reply within 30 s\nstderr: ${stderr}`));
    }, 30_000);
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8");
      const newline = stdout.indexOf("\n");
      if (newline < 0) return;
      clearTimeout(timer);
      child.stdin.end();
      child.kill();
      try {
        resolve(JSON.parse(stdout.slice(0, newline)));
      } catch (error) {
        reject(error);
      }
    });
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.stdin.write(
      `${JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "initialize",
        params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "pack-check", version: "0.0.0" } },
      })}\n`,
    );
  });
}
