/**
 * A whole sandbox server in-process for end-to-end tests of other packages (the MCP server, benches):
 * real database, real local chain, real HTTP on a loopback port. Not used by the service itself.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Permission } from "@agentwallet/api";
import type { Address, Hex } from "viem";
import { loadConfig } from "../config.ts";
import type { Clock } from "../ids.ts";
import { createLogger } from "../deps.ts";
import { type RunningSandbox, startSandbox } from "../sandbox/startSandbox.ts";
import { createToken } from "../services/tokens.ts";
import { getDepositAddress } from "../services/getDepositAddress.ts";

export type TestServer = {
  baseUrl: string;
  /** The server's data directory (its sandbox.json lets the CLI reach the same chain). */
  dataDir: string;
  projectId: string;
  /** read,pay,x402 */
  token: string;
  createToken(permissions: Permission[]): Promise<string>;
  /** A real on-chain deposit to the project's wallet; resolves once the ledger has credited it. */
  fund(amountMicros: bigint): Promise<void>;
  server: RunningSandbox;
  stop(): Promise<void>;
};

export type StartTestServerOptions = {
  database?: "sqlite" | "postgres";
  /** Postgres URL (defaults to TEST_DATABASE_URL); the caller owns schema isolation. */
  databaseUrl?: string;
  plan?: "free" | "pro" | "business";
  env?: NodeJS.ProcessEnv;
  /** The clock webhook deliveries are timed by (server.ts). */
  webhookClock?: Clock;
  /** Start the sandbox's demo x402 merchant and facilitator, as `npm start` does. */
  x402Demo?: boolean;
};

export async function startTestServer(options: StartTestServerOptions = {}): Promise<TestServer> {
  const dataDir = mkdtempSync(join(tmpdir(), "aw-harness-"));
  const databaseUrl = options.database === "postgres" ? (options.databaseUrl ?? process.env.TEST_DATABASE_URL) : undefined;
  const env: NodeJS.ProcessEnv = {
    AGENTWALLET_DATA_DIR: dataDir,
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    DEPOSIT_CONFIRMATIONS: "1",
    WATCHER_INTERVAL_MS: "100",
    WORKER_INTERVAL_MS: "100",
    FIAT_SANDBOX_DELAY_MS: "200",
    X402_ALLOW_HTTP: "1",
    X402_ALLOW_PRIVATE_NETWORKS: "1",
    // Settlement on the request thread: a settlement thread loads the whole service a second time (about
    // 4 CPU-seconds a start). The thread is tested where it is the subject (pay/settlementThread.e2e) and
    // in every test that runs `agentwallet serve` as a process; benches ask for it.
    SETTLEMENT: "inline",
    ...options.env,
  };
  const config = loadConfig(env, { port: 0, host: "127.0.0.1" });
  const removeDataDir = () => rmSync(dataDir, { recursive: true, force: true });
  // The data directory holds the sandbox's master mnemonic: a start that fails leaves neither it nor a server behind.
  let server: RunningSandbox | undefined;
  try {
    // The data directory is removed at stop, so the chain keeps no state file either.
    server = await startSandbox(config, createLogger(process.env.AW_TEST_LOG_LEVEL ?? "silent"), { defaultMetrics: false, chainState: "memory", webhookClock: options.webhookClock, x402Demo: options.x402Demo ?? false, env });
    // Tests and benches start measuring with settlement running (a served request does not wait for it).
    await server.settlement.ready();
    return await harnessOn(server, dataDir, options.plan ?? "free", removeDataDir);
  } catch (err) {
    await server?.stop().catch(() => undefined);
    removeDataDir();
    throw err;
  }
}

/** The harness over a started sandbox: its project and token, funding, and a stop that also removes the data directory. */
async function harnessOn(server: RunningSandbox, dataDir: string, plan: "free" | "pro" | "business", removeDataDir: () => void): Promise<TestServer> {
  const ctx = server.ctx;
  const project = await ctx.ledger.projects.create({ name: "harness", plan });
  const mint = async (perms: Permission[]) => (await createToken(ctx, { projectId: project.id, permissions: perms, mode: "test" })).token;
  const token = await mint(["read", "pay", "x402"]);
  return {
    baseUrl: server.baseUrl,
    dataDir,
    projectId: project.id,
    token,
    createToken: mint,
    server,
    async fund(amountMicros) {
      const { address } = await getDepositAddress(ctx, project.id);
      const hash: Hex = await server.chain!.sandbox!.mint(address as Address, amountMicros);
      await ctx.hooks.depositHint?.(hash);
      for (let i = 0; i < 200; i++) {
        if ((await ctx.ledger.deposits.statusOf(hash)) === "credited") return;
        await new Promise((r) => setTimeout(r, 50));
        if (i % 10 === 9) await ctx.hooks.depositHint?.(hash);
      }
      throw new Error(`deposit ${hash} was not credited within 10 s`);
    },
    async stop() {
      await server.stop();
      removeDataDir();
    },
  };
}
