/**
 * `create_sub_agent_token` end to end: the real Agent Wallet server (sandbox, real database and chain) behind
 * the real bin, driven by the SDK's `Client` over stdio. A token with `delegate` sees the tool and creates a
 * child; the child's MCP configuration, started exactly as the answer says, works and pays within its slice;
 * a token without `delegate`, or in read-only mode, never sees the tool.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { createWalletClient, type McpClientConfig } from "@agentwallet/api";
import { startTestServer, type TestServer } from "../../server/src/testing/harness.ts";
import { binPath, connectStdio, textOf, type StdioSession } from "./helpers.ts";

const toolName = "create_sub_agent_token";
const randomAddress = () => `0x${Array.from({ length: 40 }, () => "0123456789abcdef"[Math.floor(Math.random() * 16)]).join("")}`;

type Created = { token: { id: string; token: string; parent_id: string; depth: number; permissions: string[]; allowance_usd: number | null }; base_url: string; mcp_config: McpClientConfig };

describe("create_sub_agent_token against the real Agent Wallet server", () => {
  let server: TestServer;
  let delegateToken: string;
  let parent: StdioSession;
  const envOf = (token: string) => ({ AGENTWALLET_API_TOKEN: token, AGENTWALLET_BASE_URL: server.baseUrl });

  beforeAll(async () => {
    server = await startTestServer();
    await server.fund(20_000_000n);
    delegateToken = await server.createToken(["read", "pay", "delegate"]);
    parent = await connectStdio({ ...envOf(delegateToken), AGENTWALLET_MAX_PAYMENT_USD: "3" });
  });
  afterAll(async () => {
    await parent?.close();
    await server?.stop();
  });

  test("snapshot: the tool as a delegate token's client sees it (schemas, annotations, description)", async () => {
    const { tools } = await parent.client.listTools();
    const tool = tools.find((candidate) => candidate.name === toolName);
    expect(tool, tools.map((t) => t.name).join(", ")).toBeDefined();
    expect(tools.at(-1)?.name).toBe(toolName);
    expect(JSON.stringify(tool)).not.toContain("$ref");
    expect(tool!.annotations).toEqual({ readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false });
    await expect(`${JSON.stringify(tool, null, 2)}\n`).toMatchFileSnapshot(`./__snapshots__/tools/${toolName}.json`);
    expect(parent.stderr()).toContain("11 tools over stdio");
  });

  test("behavior: the child it creates is the API's, and its configuration, started as given, pays within the child's slice", async () => {
    const result = await parent.client.callTool({
      name: toolName,
      arguments: { name: "researcher", permissions: ["read", "pay"], allowance_usd: 2, spending_controls: { spending_limits: [{ amount_usd: 1.5, interval: "per_payment" }] } },
    });
    expect(result.isError, textOf(result)).toBeFalsy();
    const created = result.structuredContent as Created;
    expect(created.token).toMatchObject({ depth: 1, permissions: ["read", "pay"], allowance_usd: 2 });
    expect(created.token.token).toMatch(/^aw_test_/);
    expect(created.base_url).toBe(server.baseUrl);
    // The smaller of the parent's server cap ($3) and the child's per-payment limit ($1.50) guards the child's server.
    expect(created.mcp_config).toEqual({
      mcpServers: { agentwallet: { command: "node", args: [binPath], env: { AGENTWALLET_API_TOKEN: created.token.token, AGENTWALLET_BASE_URL: server.baseUrl, AGENTWALLET_MAX_PAYMENT_USD: "1.5" } } },
    });
    // The API lists it under the parent, with the parent as its parent.
    const parentApi = createWalletClient({ baseUrl: server.baseUrl, token: delegateToken });
    const listed = (await parentApi.listChildTokens()).data.data;
    expect(listed.find((t) => t.id === created.token.id)).toMatchObject({ parent_id: expect.any(String), depth: 1, spent_usd: 0 });

    const child = await connectConfig(created.mcp_config);
    try {
      const names = (await child.listTools()).tools.map((t) => t.name);
      expect(names).toContain("pay");
      expect(names).not.toContain(toolName); // the child has no delegate
      const paid = await child.callTool({ name: "pay", arguments: { recipient: randomAddress(), amount_usd: 1.25, idempotency_key: "sub-agent-1" } });
      expect(paid.isError, textOf(paid)).toBeFalsy();
      expect(paid.structuredContent).toMatchObject({ rail: "usdc_transfer", amount_charged: 1_250_000 });
      // $1.25 of its $2 allowance is spent: $1 more does not fit, and the API says so.
      const refused = await child.callTool({ name: "pay", arguments: { recipient: randomAddress(), amount_usd: 1, idempotency_key: "sub-agent-2" } });
      expect(refused.isError).toBe(true);
      expect(textOf(refused)).toMatch(/HTTP 403/);
    } finally {
      await child.close();
    }
    const after = (await parentApi.listChildTokens()).data.data.find((t) => t.id === created.token.id);
    expect(after?.spent_usd).toBe(1.25);
  });

  test("behavior: a child wider than the token is refused as a tool error that says what to do; nothing is created", async () => {
    const before = (await createWalletClient({ baseUrl: server.baseUrl, token: delegateToken }).listChildTokens()).data.data.length;
    const result = await parent.client.callTool({ name: toolName, arguments: { permissions: ["read", "x402"] } });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain("HTTP 403");
    expect(textOf(result)).toContain("no token was created");
    expect(textOf(result)).not.toContain(delegateToken);
    expect((await createWalletClient({ baseUrl: server.baseUrl, token: delegateToken }).listChildTokens()).data.data.length).toBe(before);
  });

  test("behavior: a token without delegate does not see the tool, and calling it finds no such tool", async () => {
    const session = await connectStdio(envOf(server.token));
    try {
      const names = (await session.client.listTools()).tools.map((t) => t.name);
      expect(names).toContain("pay");
      expect(names).not.toContain(toolName);
      const result = await session.client.callTool({ name: toolName, arguments: { permissions: ["read"] } });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toContain(`Tool ${toolName} not found`);
    } finally {
      await session.close();
    }
  });

  test("behavior: read-only mode drops the tool even for a delegate token", async () => {
    const session = await connectStdio({ ...envOf(delegateToken), AGENTWALLET_READ_ONLY: "1" });
    try {
      expect((await session.client.listTools()).tools.map((t) => t.name)).not.toContain(toolName);
    } finally {
      await session.close();
    }
  });
});

/** Starts the server exactly as a client given `config` would: its command, args and env. */
async function connectConfig(config: McpClientConfig): Promise<Client> {
  const { command, args = [], env } = config.mcpServers.agentwallet;
  const transport = new StdioClientTransport({ command: command === "node" ? process.execPath : command, args, env: { ...getDefaultEnvironment(), ...env }, stderr: "pipe" });
  const client = new Client({ name: "sub-agent", version: "0.0.0" });
  await client.connect(transport);
  return client;
}
