/**
 * The shape that ships before the package is on the registry: `npm pack` (which builds the bundle in `prepack`)
 * gives a tarball that installs on its own into an empty directory — no checkout, no workspace beside it — and
 * the installed `agentwallet-mcp` serves its tools to the SDK's client. These are the README's commands.
 */
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
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

test("behavior: the packed tarball installs into an empty directory and its bin lists the ten tools (create_sub_agent_token only with delegate)", { timeout: 4 * npmTimeoutMs }, async () => {
  const packed = await run("npm", ["pack", "--pack-destination", workDir], { cwd: packageDir, timeoutMs: npmTimeoutMs });
  expect(packed.code, packed.stderr).toBe(0);
  const tarball = (await readdir(workDir)).find((name) => name.endsWith(".tgz"));
  expect(tarball).toBe("agentwallet-mcp-0.1.0.tgz");
  expect(packed.stderr).toContain("dist/agentwallet-mcp.js");
  expect(packed.stderr).not.toMatch(/\ssrc\//);

  // `npm install -g <tarball>` as the README says, into an empty prefix instead of the machine's global one.
  // --prefer-offline: from the local npm cache when it has everything, from the registry otherwise.
  const prefix = join(workDir, "prefix");
  const installed = await run(
    "npm",
    ["install", "-g", "--prefix", prefix, "--prefer-offline", "--no-audit", "--no-fund", join(workDir, tarball ?? "")],
    { cwd: workDir, timeoutMs: npmTimeoutMs },
  );
  expect(installed.code, installed.stderr).toBe(0);
  const installedPackage = join(prefix, "lib/node_modules/@agentwallet/mcp");
  expect(existsSync(join(installedPackage, "dist/agentwallet-mcp.js"))).toBe(true);
  expect(existsSync(join(installedPackage, "src"))).toBe(false);
  // Only the declared runtime dependencies came along: the API schemas are inside the bundle.
  expect(existsSync(join(installedPackage, "node_modules/@agentwallet/api"))).toBe(false);

  const transport = new StdioClientTransport({
    command: join(prefix, "bin/agentwallet-mcp"),
    cwd: workDir,
    env: cleanEnv({ AGENTWALLET_API_TOKEN: fakeToken, AGENTWALLET_BASE_URL: "http://127.0.0.1:9" }) as Record<string, string>,
    stderr: "pipe",
  });
  const client = new Client({ name: "pack-check", version: "0.0.0" });
  await client.connect(transport);
  try {
    expect(client.getServerVersion()).toMatchObject({ name: "agentwallet", version: "0.1.0" });
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(
      ["check_price", "get_balance", "get_spending_limits", "get_transaction", "get_usdc_deposit_address", "list_transactions", "pay", "send_payment", "send_usdc", "x402_pay"],
    );
  } finally {
    await client.close();
  }
});
