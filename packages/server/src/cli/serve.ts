/** `agentwallet serve`: starts the service and, in sandbox mode, prints how to use it. */
import { type Config, describeDatabase } from "../config.ts";
import { createLogger } from "../deps.ts";
import { startServer } from "../server.ts";
import { ensureSandboxDemo } from "../sandbox/demo.ts";
import { startSandbox } from "../sandbox/startSandbox.ts";
import { createSignInCode } from "../services/console/signIn.ts";
import type { X402Demo } from "../sandbox/x402Demo.ts";

export async function runServe(config: Config): Promise<number> {
  const logger = createLogger(config.logLevel);
  logger.info({ database: describeDatabase(config), mode: config.mode }, `starting on ${describeDatabase(config)}`);
  const sandbox = config.mode === "sandbox" ? await startSandbox(config, logger, { x402Demo: true }) : undefined;
  const server = sandbox ?? (await startServer(config, logger));
  if (sandbox) {
    const demo = await ensureSandboxDemo(server.ctx);
    const consoleUrl = `${server.baseUrl}/console/signin?code=${await createSignInCode(server.ctx, demo.tokenId)}`;
    process.stdout.write(sandboxBanner(server.baseUrl, describeDatabase(config), demo, sandbox.x402Demo, consoleUrl));
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

function sandboxBanner(baseUrl: string, database: string, demo: { projectId: string; token: string; depositAddress: string }, x402: X402Demo | undefined, consoleUrl: string): string {
  return `
Agent Wallet sandbox is running.

  Base URL         ${baseUrl}
  Demo project     ${demo.projectId}
  Demo token       ${demo.token}
  Deposit address  ${demo.depositAddress}  (test USDC on the local chain)
  Console          ${consoleUrl}
                   (a one-time sign-in link to the demo project, valid 24 h)
  Database         ${database}
  Webhooks         npm run -s agentwallet -- webhooks create --project ${demo.projectId} --url http://127.0.0.1:4000/
                   (sends the project's events to a local receiver: README, "Webhooks")

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
