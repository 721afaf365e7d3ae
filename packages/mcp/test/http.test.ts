/**
 * Streamable HTTP (`agentwallet-mcp --http PORT`): the same tools through the SDK's HTTP client, sessions that
 * carry elicitation, and the loopback-only guards. The API is a recording endpoint here; the real server over
 * HTTP is in e2e.test.ts.
 */
import { request } from "node:http";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { fakeToken, recordingApi, startHttpBin, textOf, type HttpServerProcess } from "./helpers.ts";

const balance = {
  project_id: "prj_1",
  currency: "usdc",
  available: 12_500_000,
  pending: 0,
  total_funded: 12_500_000,
  total_spent: 0,
  wallet_address: null,
};

describe("agentwallet-mcp --http", () => {
  let api: Awaited<ReturnType<typeof recordingApi>>;
  let server: HttpServerProcess;

  beforeAll(async () => {
    api = await recordingApi((req) =>
      req.path === "/v1/balance" ? { status: 200, body: balance } : { status: 403, body: { detail: "no pay permission" } },
    );
    server = await startHttpBin({
      AGENTWALLET_API_TOKEN: fakeToken,
      AGENTWALLET_BASE_URL: api.baseUrl,
      AGENTWALLET_CONFIRM_ABOVE_USD: "10",
    });
  });
  afterAll(async () => {
    await server?.stop();
    await api?.close();
  });

  test("default: binds to loopback; tools/list and tools/call work through the SDK's HTTP client", async () => {
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
    const client = new Client({ name: "http-test", version: "0.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      expect((await client.listTools()).tools).toHaveLength(10);
      const result = await client.callTool({ name: "get_balance", arguments: {} });
      expect(result.structuredContent).toEqual(balance);
    } finally {
      await client.close();
    }
  });

  test("behavior: a session carries elicitation, so pay can ask the user over HTTP", async () => {
    const client = new Client({ name: "http-test", version: "0.0.0" }, { capabilities: { elicitation: { form: {} } } });
    const asked: string[] = [];
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      asked.push(req.params.message);
      return { action: "accept", content: { confirm: true } };
    });
    await client.connect(new StreamableHTTPClientTransport(new URL(server.url)));
    try {
      const result = await client.callTool({ name: "pay", arguments: { recipient: `0x${"cd".repeat(20)}`, amount_usd: 20 } });
      expect(asked).toHaveLength(1);
      expect(api.requests.some((req) => req.path === "/v1/pay")).toBe(true);
      expect(textOf(result)).toContain("HTTP 403: no pay permission");
    } finally {
      await client.close();
    }
  });

  test("error: a foreign Host header is refused (DNS rebinding), and so is a request without a session", async () => {
    const { port } = new URL(server.url);
    const initialize = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "0" } },
    };
    expect((await post(server.url, initialize, { host: `attacker.example:${port}` })).status).toBe(403);
    expect((await post(server.url, initialize, { origin: "https://attacker.example" })).status).toBe(403);
    expect((await post(server.url, { jsonrpc: "2.0", id: 2, method: "tools/list" }, {})).status).toBe(400);
  });
});

/** A raw POST that, unlike fetch, may set the Host header. */
function post(url: string, body: unknown, headers: Record<string, string>): Promise<{ status: number }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      },
      (res) => {
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify(body));
  });
}
