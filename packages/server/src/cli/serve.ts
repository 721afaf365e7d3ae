/** `agentwallet serve`: starts the service and, in sandbox mode, prints how to use it. */
import type { Config } from "../config.ts";
import { createLogger } from "../deps.ts";
import { startServer } from "../server.ts";
import { ensureSandboxDemo } from "../sandbox/demo.ts";
import type { X402Demo } from "../sandbox/x402Demo.ts";

export async function runServe(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel);
  if (config.mode === "sandbox") allowLoopbackX402(config);
  const server = await startServer(config, logger, { x402Demo: config.mode === "sandbox" });
  if (config.mode === "sandbox") {
    const demo = await ensureSandboxDemo(server.ctx);
    process.stdout.write(sandboxBanner(server.baseUrl, demo, server.x402Demo));
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    server.stop().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, "error during shutdown");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  return -1;
}

/**
 * The sandbox pays its own demo merchant over plain http on loopback, so it allows both for itself
 * unless told otherwise; live mode refuses these settings (config.ts).
 */
function allowLoopbackX402(config: Config, env: NodeJS.ProcessEnv = process.env): void {
  if (env.X402_ALLOW_HTTP === undefined) config.x402.allowHttp = true;
  if (env.X402_ALLOW_PRIVATE_NETWORKS === undefined) config.x402.allowPrivateNetworks = true;
}

function sandboxBanner(baseUrl: string, demo: { projectId: string; token: string; depositAddress: string }, x402: X402Demo | undefined): string {
  return `
Agent Wallet sandbox is running.

  Base URL         ${baseUrl}
  Demo project     ${demo.projectId}
  Demo token       ${demo.token}
  Deposit address  ${demo.depositAddress}  (test USDC on the local chain)

Try:
  curl -s ${baseUrl}/v1/balance -H "Authorization: Bearer ${demo.token}"
${x402 ? x402Try(baseUrl, demo, x402) : ""}
`;
}

function x402Try(baseUrl: string, demo: { projectId: string; token: string }, x402: X402Demo): string {
  const body = JSON.stringify({ recipient: x402.paidUrl, max_amount_usdc: x402.priceMicros });
  return `
Pay the demo x402 merchant (${x402.paidUrl}, $0.01 in test USDC): fund the project, then pay.
  npm run agentwallet -- fund --project ${demo.projectId} --amount-usdc 1
  curl -s ${baseUrl}/v1/pay -H "Authorization: Bearer ${demo.token}" -H "Content-Type: application/json" -d '${body}'
`;
}
