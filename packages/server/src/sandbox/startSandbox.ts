/**
 * The sandbox (`npm start`): its own world first — the local chain, the Bridge stand-in when
 * FIAT_PROVIDER=bridge, the demo x402 merchant and its facilitator — then the configuration that world
 * makes (webhook secrets, the stand-in's Bridge settings, the demo's loopback targets), frozen, and only then
 * the same `startServer` a live deployment runs. Nothing changes the configuration once the server has it.
 * `stop()` stops the server, then the sandbox's world.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Logger } from "pino";
import { type BridgeSettings, type Config, freezeConfig } from "../config.ts";
import { type ChainRuntime, startChainRuntime } from "../chain/runtime.ts";
import { type RunningServer, type StartServerOptions, startServer } from "../server.ts";
import { type X402Demo, startX402Demo } from "./x402Demo.ts";

export type RunningSandbox = RunningServer & {
  chain: ChainRuntime;
  /** With `x402Demo`: the demo x402 merchant and its facilitator. */
  x402Demo: X402Demo | undefined;
};

export type StartSandboxOptions = Omit<StartServerOptions, "chain" | "demoMerchant"> & {
  /** Start the demo x402 merchant and its facilitator (as `npm start` does). */
  x402Demo?: boolean;
  /** Where the local chain is kept (chain/runtime.ts): `memory` for a data directory thrown away afterwards. */
  chainState?: "file" | "memory";
  /** The environment the configuration was loaded from: it decides whether plain-http x402 targets are allowed. */
  env?: NodeJS.ProcessEnv;
};

/** What the sandbox's world adds to a loaded configuration. */
export type SandboxParts = {
  webhookSecrets: { deposit: string; fiat: string };
  /** The Bridge stand-in's settings, with FIAT_PROVIDER=bridge. */
  bridge: BridgeSettings | undefined;
  /** URLs of the servers the sandbox runs itself that x402 payments may reach on loopback. */
  x402Targets: readonly string[];
  /** Whether the environment leaves X402_ALLOW_HTTP unset (then the sandbox allows http). */
  x402HttpUnset: boolean;
  /** The demo facilitator, whose Bazaar catalogue lists the demo merchant (GET /v1/x402/resources), unless X402_DISCOVERY_URL names another. */
  x402DiscoveryUrl?: string;
};

export async function startSandbox(config: Config, logger: Logger, opts: StartSandboxOptions = {}): Promise<RunningSandbox> {
  if (config.mode !== "sandbox") throw new Error("startSandbox needs a sandbox configuration (BASE_RPC_URL unset)");
  const { x402Demo: wantsDemo, chainState, env = process.env, ...serverOpts } = opts;
  // The sandbox keeps its files there (secrets, chain state) even when its database is PostgreSQL.
  mkdirSync(config.dataDir, { recursive: true });
  const webhookSecrets = sandboxWebhookSecrets(config.dataDir);
  const chain = await startChainRuntime(config, { chainState });
  let bridgeStandIn: { url: string; setWebhookUrl(url: string): void; stop(): Promise<void> } | undefined;
  let x402Demo: X402Demo | undefined;
  const stopWorld = async () => {
    await x402Demo?.stop();
    await bridgeStandIn?.stop();
    await chain.sandbox?.stop();
  };
  let server: RunningServer;
  try {
    let bridge: BridgeSettings | undefined;
    if (config.fiat.provider === "bridge") {
      // The sandbox's way to watch the real Bridge adapter: Bridge's API stood in for on the local chain.
      const { startBridgeStandIn } = await import("@agentwallet/devchain");
      const standIn = await startBridgeStandIn({
        rpcUrl: chain.sandbox!.rpcUrl,
        chainId: config.chain.chainId,
        usdcAddress: chain.client.usdcAddress,
        statePath: chain.sandbox!.statePath ? join(config.dataDir, "bridge-standin.json") : undefined,
        stepMs: config.fiat.sandboxDelayMs,
      });
      bridgeStandIn = standIn;
      bridge = { apiKey: standIn.apiKey, customerId: standIn.customerId, baseUrl: standIn.url, webhookPublicKey: standIn.webhookPublicKey, checkingOrSavings: "checking", pollIntervalMs: 1_000, timeoutMs: 15_000, retries: 2, refundFromAddresses: [] };
    }
    if (wantsDemo) {
      x402Demo = await startX402Demo(chain, {
        dataDir: config.dataDir,
        onPortTaken: (port) => logger.warn({ port }, `the demo x402 merchant's port ${port} is taken; it listens on another one this time`),
      });
    }
    const x402Targets = x402Demo ? [x402Demo.merchantUrl, x402Demo.facilitatorUrl] : [];
    const settled = sandboxConfig(config, { webhookSecrets, bridge, x402Targets, x402HttpUnset: env.X402_ALLOW_HTTP === undefined, x402DiscoveryUrl: x402Demo?.facilitatorUrl });
    server = await startServer(settled, logger, { ...serverOpts, chain, demoMerchant: x402Demo ? { paidUrl: x402Demo.paidUrl, priceMicros: x402Demo.priceMicros } : undefined });
  } catch (err) {
    await stopWorld();
    throw err;
  }
  bridgeStandIn?.setWebhookUrl(`${server.listenUrl}/v1/webhooks/bridge`);
  // Only a start that succeeded moves what the next start reuses (a failed second start leaves the first's).
  x402Demo?.keepPort();
  writeSandboxFile(server, x402Demo);
  let stopped = false;
  return {
    ...server,
    chain,
    x402Demo,
    async stop() {
      if (stopped) return;
      stopped = true;
      await server.stop();
      await stopWorld();
    },
  };
}

/**
 * A loaded sandbox configuration completed with what its world made, frozen again. The webhook secrets fill
 * in only what the environment left unset. The demo's merchant and facilitator are the only loopback
 * targets x402 may reach (decisions.md, "Sandbox x402 targets"); plain http is allowed unless the
 * environment says otherwise (private networks stay refused unless X402_ALLOW_PRIVATE_NETWORKS=1).
 */
export function sandboxConfig(config: Config, parts: SandboxParts): Config {
  return freezeConfig({
    ...config,
    webhooks: { depositSecret: config.webhooks.depositSecret ?? parts.webhookSecrets.deposit, fiatSecret: config.webhooks.fiatSecret ?? parts.webhookSecrets.fiat },
    fiat: { ...config.fiat, bridge: parts.bridge ?? config.fiat.bridge },
    x402: {
      ...config.x402,
      allowHttp: config.x402.allowHttp || parts.x402HttpUnset,
      allowedTargets: [...config.x402.allowedTargets, ...parts.x402Targets.map((u) => new URL(u).host)],
      discoveryUrl: config.x402.discoveryUrl ?? parts.x402DiscoveryUrl,
    },
  });
}

/** Sandbox secrets for the inbound webhooks, generated once into the data directory. */
function sandboxWebhookSecrets(dataDir: string): { deposit: string; fiat: string } {
  const file = join(dataDir, "webhook-secrets.json");
  if (existsSync(file)) return JSON.parse(readFileSync(file, "utf8")) as { deposit: string; fiat: string };
  const secrets = { deposit: `whsec_${randomBytes(24).toString("base64")}`, fiat: `whsec_${randomBytes(24).toString("base64")}` };
  writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  return secrets;
}

/** `sandbox.json` in the data directory: how the CLI (`fund`, `sandbox info`) reaches the running sandbox. */
function writeSandboxFile(server: RunningServer & { chain: ChainRuntime }, x402Demo: X402Demo | undefined): void {
  const { config } = server.ctx;
  const { chain } = server;
  writeFileSync(
    join(config.dataDir, "sandbox.json"),
    JSON.stringify(
      {
        base_url: server.baseUrl,
        rpc_url: chain.sandbox!.rpcUrl,
        chain_id: config.chain.chainId,
        usdc_address: chain.client.usdcAddress,
        relayer_address: chain.relayerAddress,
        treasury_address: chain.treasuryAddress,
        minter_private_key: chain.sandbox!.accounts.deployer?.privateKey,
        deposit_webhook_secret: config.webhooks.depositSecret,
        fiat_webhook_secret: config.webhooks.fiatSecret,
        facilitator_url: x402Demo?.facilitatorUrl ?? null,
        demo_merchant_url: x402Demo?.merchantUrl ?? null,
        demo_merchant_paid_url: x402Demo?.paidUrl ?? null,
        pid: process.pid,
      },
      null,
      2,
    ),
    { mode: 0o600 },
  );
}
