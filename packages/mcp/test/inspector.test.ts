/** The MCP Inspector CLI, an independent client, against the real bin. */
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, expect, test } from "vitest";
import { cleanEnv, ensureInspector, fakeToken, inspector, packageDir, repoDir, run } from "./helpers.ts";

// The first run installs the pinned Inspector (see helpers.ts).
beforeAll(() => ensureInspector(), 240_000);

test("behavior: `inspector --cli --method tools/list --strict` lists the ten tools (create_sub_agent_token only with delegate) with no schema errors", async () => {
  const result = await inspector(["--method", "tools/list", "--strict"], {
    AGENTWALLET_API_TOKEN: fakeToken,
    AGENTWALLET_BASE_URL: "http://127.0.0.1:9",
  });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toMatch(/\b0 errors\b/);
  const { tools } = JSON.parse(result.stdout) as { tools: { name: string }[] };
  expect(tools.map((tool) => tool.name).sort()).toEqual(
    ["check_price", "get_balance", "get_spending_limits", "get_transaction", "get_usdc_deposit_address", "list_transactions", "pay", "send_payment", "send_usdc", "x402_pay"],
  );
});

test("docs: the README's Inspector command, with its `-e NAME=value` variables, lists the tools", async () => {
  const readme = await readFile(join(packageDir, "README.md"), "utf8");
  const section = readme.slice(readme.indexOf("**MCP Inspector.**"));
  const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
  expect(block).toContain("-e AGENTWALLET_API_TOKEN=");
  // As written, with the placeholders filled in; the shell running it has no AGENTWALLET_* variable.
  const command = block!
    .replace(/\\\n/g, " ")
    .replace("npx @modelcontextprotocol/inspector", JSON.stringify(await ensureInspector()))
    .replaceAll("<repo>", repoDir.replace(/\/$/, ""))
    .replaceAll("aw_test_…", fakeToken)
    .replaceAll("http://127.0.0.1:8787", "http://127.0.0.1:9");
  const result = await run("sh", ["-c", command], { cwd: repoDir, env: cleanEnv({}), timeoutMs: 60_000 });
  expect(result.code, result.stderr).toBe(0);
  const { tools } = JSON.parse(result.stdout) as { tools: { name: string }[] };
  expect(tools).toHaveLength(10);
});
