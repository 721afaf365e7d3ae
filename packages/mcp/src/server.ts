/**
 * Builds the MCP server (SDK 1.x `McpServer`) with the wallet tools; it never connects a transport, so
 * `main.ts` chooses stdio or Streamable HTTP and tests can use either.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { createWalletClient, type McpLaunchCommand, type WalletClient } from "@agentwallet/api";
import pkg from "../package.json" with { type: "json" };
import type { McpConfig } from "./config.ts";
import { probeDelegate } from "./delegation.ts";
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
  /** Whether the token has `delegate` (delegation.ts); undefined: asked of the API at start. */
  delegate?: boolean;
  /** How an MCP client starts this server; default: `node` with the script this process runs. */
  launch?: McpLaunchCommand;
};

export const serverName = "agentwallet";
export const serverVersion: string = pkg.version;

const instructions =
  "Agent Wallet: a project-scoped USDC wallet. Read tools: get_balance, list_transactions, get_usdc_deposit_address, " +
  "get_spending_limits (what this token may still spend). " +
  "Pay with `pay` (a URL via x402, a 0x address via USDC on Base, or a bank account via ACH); the other payment tools " +
  "are deprecated. When listed, create_sub_agent_token gives a sub-agent its own token within this one's budget. Units: micro-USDC (1 USDC = 1,000,000) unless a field says USD or cents. Pay only what the user " +
  "asked for; a refused or failed call's message says what to do next.";

/**
 * The server as a process starts it: the token's spending limits are read first (GET /v1/limits, bounded
 * by limitsReadTimeoutMs) so the `pay` tool's description can name them. Read-only mode has no `pay`.
 */
export async function startWalletMcpServer(deps: WalletMcpDeps): Promise<McpServer> {
  const client = deps.client ?? clientOf(deps.config);
  const [limitsNote, delegate] = await Promise.all([
    deps.limitsNote ?? (deps.config.readOnly ? undefined : readLimitsNote(client)),
    deps.delegate ?? (deps.config.readOnly ? false : probeDelegate(client)),
  ]);
  return createWalletMcpServer({ ...deps, client, limitsNote, delegate });
}

export function clientOf(config: McpConfig): WalletClient {
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
    launch: deps.launch ?? defaultLaunch(),
  };
  for (const tool of enabledTools(config, deps.delegate ?? false)) {
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

/**
 * Read-only mode drops every tool that can move money, `create_sub_agent_token` included (a child token is
 * spending power); it is not merely a refusal at call time. The delegate tool exists only for a token with
 * `delegate`.
 */
export function enabledTools(config: Pick<McpConfig, "readOnly">, delegate = false): readonly WalletTool[] {
  if (config.readOnly) return walletTools.filter((tool) => tool.access === "read");
  return delegate ? walletTools : walletTools.filter((tool) => tool.access !== "delegate");
}

/** The sub-agent runs the same server the way this one was started: `node <this script>`. */
function defaultLaunch(): McpLaunchCommand {
  const script = process.argv[1];
  return script ? { command: "node", args: [script] } : { command: "agentwallet-mcp", args: [] };
}

/** Tells the model the user's cap up front, so it does not plan a payment the server will refuse. */
function describeWithGuards(tool: WalletTool, config: McpConfig): string {
  if (tool.access !== "payment" || config.maxPaymentMicros === undefined) return tool.description;
  return `${tool.description} This server refuses any single payment above ${formatUsd(config.maxPaymentMicros)} (a limit the user set).`;
}
