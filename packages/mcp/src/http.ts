/**
 * Streamable HTTP transport (`--http PORT`) at `/mcp`. Sessions are stateful because a payment may need to
 * ask the user to confirm (elicitation), which is a server→client request inside the tool call: a stateless
 * server would not know the client's capabilities nor be able to route the answer back.
 *
 * Whoever reaches this port spends from the wallet with the server's token, so it binds to loopback by
 * default and refuses Host and Origin headers that are not this loopback address (DNS rebinding).
 */
import { randomUUID } from "node:crypto";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { isInitializeRequest } from "@modelcontextprotocol/sdk/types.js";
import { mcpLimits } from "./config.ts";
import { AutoIdempotencyKeys } from "./idempotency.ts";
import { startWalletMcpServer, type WalletMcpDeps } from "./server.ts";

export type HttpServerOptions = {
  port: number;
  /** Default `127.0.0.1`. */
  host?: string;
};

export type RunningHttpServer = { url: string; close: () => Promise<void> };

export const mcpPath = "/mcp";
/** Largest accepted JSON-RPC body: a proxied x402 body may be 1 MB of text, escaped in JSON. */
const requestBodyMaxBytes = 4 * 1024 * 1024;

type Session = { transport: StreamableHTTPServerTransport; lastSeenMs: number };

export async function startHttpServer(deps: WalletMcpDeps, options: HttpServerOptions): Promise<RunningHttpServer> {
  const host = options.host ?? "127.0.0.1";
  const shared: WalletMcpDeps = { ...deps, autoKeys: deps.autoKeys ?? new AutoIdempotencyKeys() };
  const sessions = new Map<string, Session>();
  let allowedHosts: Set<string> | undefined;
  let allowedOrigins: Set<string> | undefined;

  const http = createServer((req, res) => {
    handle(req, res).catch((error: unknown) => {
      process.stderr.write(`agentwallet-mcp: HTTP request failed: ${error instanceof Error ? error.message : String(error)}\n`);
      if (!res.headersSent) jsonRpcError(res, 500, "Internal server error");
      else res.end();
    });
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname !== mcpPath) return jsonRpcError(res, 404, `Not found: the MCP endpoint is ${mcpPath}`);
    if (allowedHosts && !allowedHosts.has(req.headers.host ?? "")) return jsonRpcError(res, 403, "Invalid Host header");
    const origin = req.headers.origin;
    if (allowedOrigins && origin !== undefined && !allowedOrigins.has(origin)) {
      return jsonRpcError(res, 403, "Invalid Origin header");
    }
    const body = req.method === "POST" ? await readJson(req) : undefined;
    if (body === invalidBody) return jsonRpcError(res, 400, "Request body is not JSON or is too large", -32700);
    const sessionId = req.headers["mcp-session-id"];
    const known = typeof sessionId === "string" ? sessions.get(sessionId) : undefined;
    if (known) {
      known.lastSeenMs = Date.now();
      return known.transport.handleRequest(req, res, body);
    }
    if (sessionId !== undefined || req.method !== "POST" || !isInitializeRequest(body)) {
      return jsonRpcError(res, sessionId === undefined ? 400 : 404, "No valid session: send initialize first");
    }
    if (sessions.size >= mcpLimits.httpSessionsMax) {
      return jsonRpcError(res, 503, `Too many sessions (${mcpLimits.httpSessionsMax}); close one and retry`);
    }
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, { transport, lastSeenMs: Date.now() });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await (await startWalletMcpServer(shared)).connect(transport);
    await transport.handleRequest(req, res, body);
  }

  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [id, session] of sessions) {
      if (now - session.lastSeenMs > mcpLimits.httpSessionIdleMs) {
        sessions.delete(id);
        void session.transport.close();
      }
    }
  }, 60_000);
  sweep.unref();

  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(options.port, host, () => resolve());
  });
  const { port } = http.address() as AddressInfo;
  if (isLoopback(host)) {
    const names = ["127.0.0.1", "localhost", "[::1]"];
    allowedHosts = new Set(names.map((name) => `${name}:${port}`));
    allowedOrigins = new Set(names.map((name) => `http://${name}:${port}`));
  }
  const hostInUrl = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${hostInUrl}:${port}${mcpPath}`,
    close: async () => {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((session) => session.transport.close()));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

export function isLoopback(host: string): boolean {
  return host === "localhost" || host === "::1" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

const invalidBody = Symbol("invalid body");

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > requestBodyMaxBytes) return invalidBody;
    chunks.push(chunk);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString("utf8"));
  } catch {
    return invalidBody;
  }
}

function jsonRpcError(res: ServerResponse, status: number, message: string, code = -32000): void {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: null }));
}
