export { createWalletMcpServer, enabledTools, serverName, serverVersion, startWalletMcpServer, type WalletMcpDeps } from "./server.ts";
export { startHttpServer, mcpPath, type HttpServerOptions, type RunningHttpServer } from "./http.ts";
export { loadConfig, ConfigError, defaultBaseUrl, mcpLimits, type McpConfig } from "./config.ts";
export { AutoIdempotencyKeys, canonicalJson } from "./idempotency.ts";
export { walletTools } from "./tools/index.ts";
export type { WalletTool, ToolContext } from "./tool.ts";
