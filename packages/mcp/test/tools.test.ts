/**
 * The tool surface as an MCP client sees it (`tools/list` over stdio from the real bin): names from the
 * spec's table, schemas and annotations pinned by one snapshot file per tool, and the model-facing text.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { connectStdio, fakeToken, type StdioSession } from "./helpers.ts";

const specTools = [
  "get_balance",
  "list_transactions",
  "pay",
  "get_usdc_deposit_address",
  "get_spending_limits",
  "check_price",
  "get_transaction",
  "send_payment",
  "x402_pay",
  "send_usdc",
];
const readTools = ["get_balance", "list_transactions", "get_usdc_deposit_address", "get_spending_limits", "check_price", "get_transaction"];
/** Read tools that reach beyond the wallet: check_price makes the unpaid request to the URL. */
const openReadTools = ["check_price"];
const deprecatedTools = ["send_payment", "x402_pay", "send_usdc"];

// No API is reached by listing; a closed port makes sure nothing else would answer.
const env = { AGENTWALLET_API_TOKEN: fakeToken, AGENTWALLET_BASE_URL: "http://127.0.0.1:9" };

describe("tools/list", () => {
  let session: StdioSession;
  let tools: Tool[];

  beforeAll(async () => {
    session = await connectStdio(env);
    tools = (await session.client.listTools()).tools;
  });
  afterAll(() => session.close());

  test("default: the seven tools of the spec's table, in its order, and get_spending_limits, check_price and get_transaction before the deprecated ones", () => {
    expect(tools.map((tool) => tool.name)).toEqual(specTools);
  });

  test.each(specTools)("snapshot: %s (schemas, annotations, title, description)", async (name) => {
    const tool = tools.find((candidate) => candidate.name === name);
    await expect(`${JSON.stringify(tool, null, 2)}\n`).toMatchFileSnapshot(`./__snapshots__/tools/${name}.json`);
  });

  test("behavior: every input field, at every depth, has a description for the model", () => {
    const undocumented = tools.flatMap((tool) => undescribedFields(tool.inputSchema, tool.name));
    expect(undocumented).toEqual([]);
  });

  test("behavior: no schema needs $ref resolution and every schema is an object", () => {
    for (const tool of tools) {
      expect(JSON.stringify(tool.inputSchema)).not.toContain("$ref");
      expect(JSON.stringify(tool.outputSchema)).not.toContain("$ref");
      expect(tool.outputSchema?.type).toBe("object");
    }
  });

  test("behavior: read tools are annotated read-only and closed-world (check_price: open-world, it asks the URL)", () => {
    for (const tool of tools.filter((candidate) => readTools.includes(candidate.name))) {
      expect(tool.annotations).toEqual({ readOnlyHint: true, openWorldHint: openReadTools.includes(tool.name) });
    }
  });

  test("behavior: payment tools are destructive and open-world; only those taking a key claim idempotency", () => {
    for (const tool of tools.filter((candidate) => !readTools.includes(candidate.name))) {
      expect(tool.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, openWorldHint: true });
      expect(tool.annotations?.idempotentHint).toBe(tool.name !== "x402_pay");
      expect(tool.inputSchema.properties?.idempotency_key !== undefined).toBe(tool.name !== "x402_pay");
    }
  });

  test("behavior: deprecated tools say so first and point at pay", () => {
    for (const tool of tools) {
      expect(tool.description?.startsWith("DEPRECATED: use pay")).toBe(deprecatedTools.includes(tool.name));
      expect(tool.title).toBeTruthy();
    }
  });
});

describe("guards in the tool list", () => {
  test("behavior: AGENTWALLET_READ_ONLY=1 registers only the read tools; pay does not exist", async () => {
    const session = await connectStdio({ ...env, AGENTWALLET_READ_ONLY: "1" });
    try {
      const { tools } = await session.client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(readTools);
      const result = await session.client.callTool({
        name: "pay",
        arguments: { recipient: `0x${"1".repeat(40)}`, amount_usd: 1 },
      });
      expect(result.isError).toBe(true);
      expect(JSON.stringify(result.content)).toContain("Tool pay not found");
      expect(session.stderr()).toContain("read-only");
    } finally {
      await session.close();
    }
  });

  test("behavior: the per-payment cap is stated in every payment tool's description", async () => {
    const session = await connectStdio({ ...env, AGENTWALLET_MAX_PAYMENT_USD: "25" });
    try {
      const { tools } = await session.client.listTools();
      for (const tool of tools) {
        const states = tool.description?.includes("refuses any single payment above $25.00") ?? false;
        expect(states).toBe(!readTools.includes(tool.name));
      }
    } finally {
      await session.close();
    }
  });
});

/** Paths of properties without a description, descending into objects, arrays and anyOf branches. */
function undescribedFields(schema: unknown, path: string): string[] {
  if (schema === null || typeof schema !== "object") return [];
  const node = schema as { properties?: Record<string, unknown>; items?: unknown; anyOf?: unknown[] };
  const missing: string[] = [];
  for (const [name, property] of Object.entries(node.properties ?? {})) {
    if (typeof (property as { description?: unknown }).description !== "string") missing.push(`${path}.${name}`);
    missing.push(...undescribedFields(property, `${path}.${name}`));
  }
  if (node.items) missing.push(...undescribedFields(node.items, `${path}[]`));
  for (const [index, branch] of (node.anyOf ?? []).entries()) missing.push(...undescribedFields(branch, `${path}|${index}`));
  return missing;
}
