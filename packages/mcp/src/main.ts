/**
 * `agentwallet-mcp`: reads the configuration from the environment and serves the wallet tools over stdio
 * (default) or Streamable HTTP (`--http PORT [--host HOST]`). Stdout belongs to the protocol in stdio mode,
 * so everything human goes to stderr.
 */
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { ConfigError, loadConfig, type McpConfig } from "./config.ts";
import { isLoopback, startHttpServer } from "./http.ts";
import { probeDelegate } from "./delegation.ts";
import { clientOf, enabledTools, serverVersion, startWalletMcpServer } from "./server.ts";

const usage = `Usage: agentwallet-mcp [--http PORT [--host HOST]]

Serves the Agent Wallet as MCP tools: over stdio by default, or over Streamable HTTP at
http://HOST:PORT/mcp with --http (HOST defaults to 127.0.0.1).

Environment:
  AGENTWALLET_API_TOKEN          API token (required); the tools have its permissions
  AGENTWALLET_BASE_URL           API base address (default: the built-in public address)
  AGENTWALLET_READ_ONLY=1        register only get_balance, list_transactions, get_usdc_deposit_address, get_spending_limits
  AGENTWALLET_MAX_PAYMENT_USD    refuse any single payment above this many US dollars
  AGENTWALLET_CONFIRM_ABOVE_USD  ask the user to confirm payments above this (default 10), if the client can
  AGENTWALLET_TIMEOUT_MS         deadline of every API call (default 45000)
`;

type Args = { help: boolean; version: boolean; httpPort: number | undefined; host: string };

export function parseArgs(argv: readonly string[]): Args {
  const args: Args = { help: false, version: false, httpPort: undefined, host: "127.0.0.1" };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--help" || arg === "-h") args.help = true;
    else if (arg === "--version" || arg === "-v") args.version = true;
    else if (arg === "--http") args.httpPort = parsePort(argv[++i]);
    else if (arg === "--host") args.host = requireValue("--host", argv[++i]);
    else throw new ConfigError(`unknown argument ${JSON.stringify(arg)}\n\n${usage}`);
  }
  return args;
}

function parsePort(value: string | undefined): number {
  const port = Number(requireValue("--http", value));
  if (!Number.isInteger(port) || port < 0 || port > 65_535) {
    throw new ConfigError(`--http needs a port number from 0 to 65535, got ${JSON.stringify(value)}`);
  }
  return port;
}

function requireValue(flag: string, value: string | undefined): string {
  if (value === undefined || value.startsWith("--")) throw new ConfigError(`${flag} needs a value`);
  return value;
}

async function main(): Promise<void> {
  let args: Args;
  let config: McpConfig;
  try {
    args = parseArgs(process.argv.slice(2));
    if (args.help || args.version) {
      process.stdout.write(args.help ? usage : `${serverVersion}\n`);
      return;
    }
    config = loadConfig(process.env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`agentwallet-mcp: ${error.message}\n`);
    process.exitCode = 1;
    return;
  }
  const mode = config.readOnly ? "read-only, " : "";
  if (args.httpPort === undefined) {
    const delegate = config.readOnly ? false : await probeDelegate(clientOf(config));
    await (await startWalletMcpServer({ config, delegate })).connect(new StdioServerTransport());
    process.stderr.write(`agentwallet-mcp: ${mode}${enabledTools(config, delegate).length} tools over stdio for ${config.baseUrl}\n`);
    return;
  }
  // Each HTTP session asks the API whether the token has delegate; the count here is without create_sub_agent_token.
  const tools = enabledTools(config).map((tool) => tool.name);
  if (!isLoopback(args.host)) {
    process.stderr.write(
      `agentwallet-mcp: warning: listening on ${args.host}; anyone who can reach this port spends from the wallet with this token.\n`,
    );
  }
  const running = await startHttpServer({ config }, { port: args.httpPort, host: args.host });
  process.stderr.write(`agentwallet-mcp: ${mode}${tools.length} tools at ${running.url} for ${config.baseUrl}\n`);
  const stop = () => {
    void running.close().then(() => process.exit(0));
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

await main();
