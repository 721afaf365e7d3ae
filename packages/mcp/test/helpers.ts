/**
 * Test helpers: drive the real `agentwallet-mcp` process with the SDK's own client, and a recording HTTP
 * endpoint for the guard tests that must prove a call never reached the API (or what reached it).
 */
import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, rename, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import {
  ElicitRequestSchema,
  type CallToolResult,
  type ClientCapabilities,
  type ElicitRequest,
  type ElicitResult,
} from "@modelcontextprotocol/sdk/types.js";

export const packageDir = fileURLToPath(new URL("..", import.meta.url));
export const binPath = fileURLToPath(new URL("../bin/agentwallet-mcp.js", import.meta.url));
/** Repository root, where `node_modules/.bin` holds the Inspector CLI. */
export const repoDir = fileURLToPath(new URL("../../..", import.meta.url));

/** A token-shaped secret the tests look for in every output. */
export const fakeToken = "aw_test_mcp_secret_0123456789abcdef";

export type StdioSession = {
  client: Client;
  stderr: () => string;
  /** What the client was asked to confirm, in order. */
  elicitations: ElicitRequest["params"][];
  close: () => Promise<void>;
};

export type StdioOptions = {
  /** Answer to elicitation requests; when given, the client advertises form elicitation. */
  onElicit?: (request: ElicitRequest["params"]) => ElicitResult;
};

/** Starts `agentwallet-mcp` over stdio with exactly `env` (plus PATH/HOME) and connects the SDK client. */
export async function connectStdio(env: Record<string, string>, options: StdioOptions = {}): Promise<StdioSession> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [binPath],
    env: { ...getDefaultEnvironment(), ...env },
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  // `elicitation: {}` is how 2025-06-18 clients say "forms"; the HTTP test uses the newer `{ form: {} }`.
  const capabilities: ClientCapabilities = options.onElicit ? { elicitation: {} } : {};
  const client = new Client({ name: "agentwallet-mcp-test", version: "0.0.0" }, { capabilities });
  const elicitations: ElicitRequest["params"][] = [];
  if (options.onElicit) {
    const answer = options.onElicit;
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      elicitations.push(request.params);
      return answer(request.params);
    });
  }
  await client.connect(transport);
  return { client, stderr: () => stderr, elicitations, close: () => client.close() };
}

/** The text parts of a tool result, joined. */
export function textOf(result: unknown): string {
  return ((result as CallToolResult).content ?? [])
    .map((part) => (part.type === "text" ? part.text : ""))
    .join("\n");
}

export type RecordedRequest = { method: string; path: string; headers: IncomingMessage["headers"]; body: unknown };
export type CannedReply = { status: number; body?: unknown; headers?: Record<string, string>; hangMs?: number };

/**
 * An HTTP endpoint standing where the API would be: records every request and answers with `reply`
 * (by default a 500 whose detail says the API should not have been called).
 */
export async function recordingApi(reply?: (request: RecordedRequest) => CannedReply) {
  const requests: RecordedRequest[] = [];
  const answer: (request: RecordedRequest) => CannedReply =
    reply ?? (() => ({ status: 500, body: { detail: "test endpoint: this call should not reach the API" } }));
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    const text = Buffer.concat(chunks).toString("utf8");
    const request: RecordedRequest = {
      method: req.method ?? "",
      path: req.url ?? "",
      headers: req.headers,
      body: text ? JSON.parse(text) : undefined,
    };
    requests.push(request);
    const canned = answer(request);
    if (canned.hangMs) await new Promise((resolve) => setTimeout(resolve, canned.hangMs));
    if (res.destroyed) return;
    res.writeHead(canned.status, { "content-type": "application/json", ...canned.headers });
    res.end(canned.body === undefined ? "" : JSON.stringify(canned.body));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export type ProcessResult = { code: number | null; stdout: string; stderr: string };

/** Runs a command to completion with a deadline; the child is killed when the deadline passes. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {},
): Promise<ProcessResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: "pipe" });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")));
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`${command} ${args.join(" ")} timed out after ${options.timeoutMs} ms\n${stderr}`));
    }, options.timeoutMs ?? 60_000);
    child.on("error", (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    if (options.input !== undefined) child.stdin.end(options.input);
    else child.stdin.end();
  });
}

/** Environment for child processes without any AGENTWALLET_* variable of the machine running the tests. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith("AGENTWALLET_")) env[key] = value;
  return { ...env, ...extra };
}

/**
 * The MCP Inspector, pinned. It is not a dev dependency: every release asks for Node >= 22.19 and would print
 * `EBADENGINE` warnings on every `npm install` under Node 20. The tests install it on first use (from the npm
 * cache when it has it) into node_modules/.cache, and reuse that install afterwards.
 */
export const inspectorVersion = "2.12.0";
const inspectorDir = join(repoDir, "node_modules/.cache/agentwallet-mcp-inspector", inspectorVersion);
const inspectorBin = join(inspectorDir, "node_modules/.bin/mcp-inspector");

export async function ensureInspector(): Promise<string> {
  if (existsSync(inspectorBin)) return inspectorBin;
  // Two test files may ask at once: each installs into a directory of its own and renames it into place.
  const staging = `${inspectorDir}.${process.pid}.${Date.now()}`;
  await mkdir(staging, { recursive: true });
  await writeFile(join(staging, "package.json"), JSON.stringify({ name: "inspector-for-tests", private: true }));
  const installed = await run(
    "npm",
    ["install", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error", `@modelcontextprotocol/inspector@${inspectorVersion}`],
    { cwd: staging, timeoutMs: 180_000 },
  );
  if (installed.code !== 0) throw new Error(`installing the MCP Inspector failed:\n${installed.stderr}`);
  try {
    await rename(staging, inspectorDir);
  } catch {
    await rm(staging, { recursive: true, force: true }); // another file installed it first
  }
  return inspectorBin;
}

/** Runs the MCP Inspector CLI (`--cli`) against the bin over stdio, the server's environment given with `-e`. */
export async function inspector(args: readonly string[], env: Record<string, string>): Promise<ProcessResult> {
  const envArgs = Object.entries(env).flatMap(([key, value]) => ["-e", `${key}=${value}`]);
  return run(process.execPath, [await ensureInspector(), "--cli", ...args, ...envArgs, process.execPath, binPath], {
    cwd: repoDir,
    env: cleanEnv({}),
    timeoutMs: 60_000,
  });
}

export type HttpServerProcess = { url: string; stderr: () => string; stop: () => Promise<void> };

/** Starts `agentwallet-mcp --http 0` and waits for the address it prints. */
export function startHttpBin(env: Record<string, string>, extraArgs: readonly string[] = []): Promise<HttpServerProcess> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [binPath, "--http", "0", ...extraArgs], { env: cleanEnv(env), stdio: "pipe" });
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error(`agentwallet-mcp --http did not start within 30 s\n${stderr}`));
    }, 30_000);
    const exited = new Promise<void>((done) => child.once("exit", () => done()));
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
      const match = /tools at (http:\/\/\S+\/mcp)/.exec(stderr);
      if (!match?.[1]) return;
      clearTimeout(timer);
      resolve({
        url: match[1],
        stderr: () => stderr,
        stop: async () => {
          child.kill("SIGTERM");
          await exited;
        },
      });
    });
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`agentwallet-mcp --http exited with ${code}\n${stderr}`));
    });
  });
}
