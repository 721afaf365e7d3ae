export * from "./schemas.ts";
export * from "./limits.ts";
export { buildOpenApiDocument } from "./openapi.ts";
export { mcpClientConfig, type McpClientConfig, type McpClientConfigInput, type McpLaunchCommand } from "./mcpClientConfig.ts";
export { createWalletClient, WalletApiError, type WalletClient, type WalletClientOptions, type ApiResult, type ListTransactionsParams } from "./client.ts";
