/**
 * The MCP client configuration for one token, ready to paste into Claude Desktop's
 * `claude_desktop_config.json` or Cursor's `.cursor/mcp.json` (packages/mcp/README.md). One builder, so the
 * console's "token created" page and the MCP server's `create_sub_agent_token` hand out the same shape.
 */
import type { Permission } from "./schemas.ts";

/** How the MCP client starts `agentwallet-mcp`: `node <repo>/packages/mcp/bin/agentwallet-mcp.js`, or the installed bin. */
export type McpLaunchCommand = { command: string; args: string[] };

export type McpClientConfig = {
  mcpServers: { agentwallet: { command: string; args?: string[]; env: Record<string, string> } };
};

export type McpClientConfigInput = {
  token: string;
  permissions: readonly Permission[];
  baseUrl: string;
  command: McpLaunchCommand;
  /** Becomes `AGENTWALLET_MAX_PAYMENT_USD`, so the server refuses larger payments before they reach the API. */
  maxPaymentUsd?: number | undefined;
};

export function mcpClientConfig(input: McpClientConfigInput): McpClientConfig {
  const env: Record<string, string> = { AGENTWALLET_API_TOKEN: input.token, AGENTWALLET_BASE_URL: input.baseUrl };
  if (input.maxPaymentUsd !== undefined) env.AGENTWALLET_MAX_PAYMENT_USD = String(input.maxPaymentUsd);
  // A token that cannot pay gets only the read tools: the model never sees a payment tool it would fail with.
  if (!input.permissions.includes("pay") && !input.permissions.includes("x402")) env.AGENTWALLET_READ_ONLY = "1";
  const { command, args } = input.command;
  return { mcpServers: { agentwallet: { command, ...(args.length ? { args } : {}), env } } };
}
