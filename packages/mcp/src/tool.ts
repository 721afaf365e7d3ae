/**
 * What one tool is (name, title, model-facing description, schemas, annotations, handler) and the two
 * shapes a tool call can end in. Each tool lives in its own file under `tools/`.
 */
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js";
import type {
  CallToolResult,
  ServerNotification,
  ServerRequest,
  ToolAnnotations,
} from "@modelcontextprotocol/sdk/types.js";
import type { McpLaunchCommand, WalletClient } from "@agentwallet/api";
import type { z } from "zod";
import type { McpConfig } from "./config.ts";
import type { AutoIdempotencyKeys } from "./idempotency.ts";

export type ToolExtra = RequestHandlerExtra<ServerRequest, ServerNotification>;

/** Everything a handler may use; built once per server by `createWalletMcpServer`. */
export type ToolContext = {
  config: McpConfig;
  client: WalletClient;
  autoKeys: AutoIdempotencyKeys;
  /** Whether the connected client said, at initialize, that it can show a form to the user. */
  clientCanConfirm: () => boolean;
  /** How an MCP client starts this server, for the configuration `create_sub_agent_token` hands out. */
  launch: McpLaunchCommand;
};

export type WalletTool<In extends z.ZodObject = z.ZodObject, Out extends z.ZodObject = z.ZodObject> = {
  name: string;
  title: string;
  /** What the model reads to decide when and how to call the tool. */
  description: string;
  /**
   * `read` tools are all that read-only mode registers; `delegate` tools exist only when the token has the
   * `delegate` permission (and not in read-only mode: a token that can pay is spending power too).
   */
  access: "read" | "payment" | "delegate";
  inputSchema: In;
  outputSchema: Out;
  annotations: ToolAnnotations;
  handler: (args: z.output<In>, ctx: ToolContext, extra: ToolExtra) => Promise<CallToolResult>;
};

/**
 * Types the handler's `args` from the input schema, then erases the schema types so all tools fit one list
 * (the SDK validates the arguments against that same schema before the handler runs).
 */
export function defineTool<In extends z.ZodObject, Out extends z.ZodObject>(tool: WalletTool<In, Out>): WalletTool {
  return tool as unknown as WalletTool;
}

/** A successful call: the API's data as `structuredContent`, the same JSON as text, then any notes. */
export function toolSuccess(data: Record<string, unknown>, notes: string[] = []): CallToolResult {
  return {
    content: [
      { type: "text", text: JSON.stringify(data, null, 2) },
      ...notes.map((text) => ({ type: "text" as const, text })),
    ],
    structuredContent: data,
  };
}

/** A failed call: `isError` and a message that says what happened and what to do next. */
export function toolFailure(text: string): CallToolResult {
  return { content: [{ type: "text", text }], isError: true };
}

/**
 * A copy of an API object schema that is not linked to the original, so its JSON Schema is written inline
 * instead of as a `$ref` to the original's id (MCP requires `type: "object"` at the top of a tool schema, and
 * many clients do not resolve references). `extend({})` builds a fresh schema; `clone()` would keep the link.
 */
export function inlined<T extends z.ZodObject>(schema: T): T {
  return schema.extend({}) as T;
}
