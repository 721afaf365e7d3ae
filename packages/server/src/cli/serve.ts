/** `agentwallet serve`: starts the service and, in sandbox mode, prints how to use it. */
import type { Config } from "../config.ts";
import { createLogger } from "../deps.ts";
import { startServer } from "../server.ts";
import { ensureSandboxDemo } from "../sandbox/demo.ts";

export async function runServe(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel);
  const server = await startServer(config, logger);
  if (config.mode === "sandbox") {
    const demo = await ensureSandboxDemo(server.ctx);
    process.stdout.write(sandboxBanner(server.baseUrl, demo));
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

function sandboxBanner(baseUrl: string, demo: { projectId: string; token: string; depositAddress: string }): string {
  return `
Agent Wallet sandbox is running.

  Base URL         ${baseUrl}
  Demo project     ${demo.projectId}
  Demo token       ${demo.token}
  Deposit address  ${demo.depositAddress}  (test USDC on the local chain)

Try:
  curl -s ${baseUrl}/v1/balance -H "Authorization: Bearer ${demo.token}"

`;
}
