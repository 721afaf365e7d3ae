/**
 * Builds the MCP server (SDK 1.x `McpServer`) with the wallet tools; it never connects a transport, so
 * `main.ts` chooses stdio or Streamable HTTP and tests can use either.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { createWalletClient, type WalletClient } from "@agentwallet/api";
import pkg from "../package.json" with { type: "json" };
import type { McpConfig } from "./config.ts";
import { AutoIdempotencyKeys } from "./idempotency.ts";
import { formatUsd } from "./money.ts";
import { readLimitsNote } from "./limits.ts";
import type { ToolContext, WalletTool } from "./tool.ts";
import { walletTools } from "./tools/index.ts";

export type WalletMcpDeps = {
  config: McpConfig;
  /** Shared by every session of one process, so a retry on a new HTTP session still finds its key. */
  autoKeys?: AutoIdempotencyKeys;
  client?: WalletClient;
  /** The sentence about the token's spending limits the `pay` tool's description ends with (limits.ts). */
  limitsNote?: string;
};

export const serverName = "agentwallet";
export const serverVersion: string = pkg.version;

const instructions =
  "Agent Wallet: a project-scoped USDC wallet. Read tools: get_balance, list_transactions, get_usdc_deposit_address, " +
  "get_spending_limits (what this token may still spend). " +
  "Pay with `pay` (a URL via x402, a 0x address via USDC on Base, or a bank account via ACH); the other payment tools " +
  "are deprecated. Units: micro-USDC (1 USDC = 1,000,000) unless a field says USD or cents. Pay only what the user " +
  "asked for; a refused or failed call's message says what to do next.";

/**
 * The server as a process starts it: the token's spending limits are read first (GET /v1/limits, bounded
 * by limitsReadTimeoutMs) so the `pay` tool's description can name them. Read-only mode has no `pay`.
 */
export async function startWalletMcpServer(deps: WalletMcpDeps): Promise<McpServer> {
  const client = deps.client ?? clientOf(deps.config);
  const limitsNote = deps.limitsNote ?? (deps.config.readOnly ? undefined : await readLimitsNote(client));
  return createWalletMcpServer({ ...deps, client, limitsNote });
}

function clientOf(config: McpConfig): WalletClient {
  return createWalletClient({ baseUrl: config.baseUrl, token: config.token, timeoutMs: config.requestTimeoutMs });
}

export function createWalletMcpServer(deps: WalletMcpDeps): McpServer {
  const { config } = deps;
  const server = new McpServer({ name: serverName, version: serverVersion }, { instructions });
  const ctx: ToolContext = {
    config,
    client: deps.client ?? clientOf(config),
    autoKeys: deps.autoKeys ?? new AutoIdempotencyKeys(),
    clientCanConfirm: () => Boolean(server.server.getClientCapabilities()?.elicitation?.form),
  };
  for (const tool of enabledTools(config)) {
    server.registerTool(
      tool.name,
      {
        title: tool.title,
        description: tool.name === "pay" && deps.limitsNote ? `${describeWithGuards(tool, config)} ${deps.limitsNote}` : describeWithGuards(tool, config),
        inputSchema: tool.inputSchema,
        outputSchema: tool.outputSchema,
        annotations: tool.annotations,
      },
      // The SDK parsed `args` with `tool.inputSchema` before this runs.
      (args: unknown, extra) => tool.handler(args as Record<string, unknown>, ctx, extra),
    );
  }
  return server;
}

/** Read-only mode drops every tool that can move money; it is not merely a refusal at call time. */
export function enabledTools(config: Pick<McpConfig, "readOnly">): readonly WalletTool[] {
  return config.readOnly ? walletTools.filter((tool) => tool.access === "read") : walletTools;
}

/** Tells the model the user's cap up front, so it does not plan a payment the server will refuse. */
function describeWithGuards(tool: WalletTool, config: McpConfig): string {
  if (tool.access !== "payment" || config.maxPaymentMicros === undefined) return tool.description;
  return `${tool.description} This server refuses any single payment above ${formatUsd(config.maxPaymentMicros)} (a limit the user set).`;
}
