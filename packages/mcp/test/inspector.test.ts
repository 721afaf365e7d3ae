/** The MCP Inspector CLI, an independent client, against the real bin. */
import { expect, test } from "vitest";
import { fakeToken, inspector } from "./helpers.ts";

test("behavior: `inspector --cli --method tools/list --strict` lists the seven tools with no schema errors", async () => {
  const result = await inspector(["--method", "tools/list", "--strict"], {
    AGENTWALLET_API_TOKEN: fakeToken,
    AGENTWALLET_BASE_URL: "http://127.0.0.1:9",
  });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stderr).toMatch(/\b0 errors\b/);
  const { tools } = JSON.parse(result.stdout) as { tools: { name: string }[] };
  expect(tools.map((tool) => tool.name).sort()).toEqual(
    ["get_balance", "get_usdc_deposit_address", "list_transactions", "pay", "send_payment", "send_usdc", "x402_pay"],
  );
});
