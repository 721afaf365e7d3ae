/**
 * Starts the service: its dependencies (deps.ts), chain, rails, background loops, and the HTTP app, in
 * that order, so the context the app is given is whole and frozen. The only module that listens on a port. `stop()` ends the loops, closes the app, then the chain and the database.
 */
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Hex } from "viem";
import type { Config } from "./config.ts";
import type { AppContext } from "./context.ts";
import { type ChainRuntime, startChainRuntime } from "./chain/runtime.ts";
import { REQUEST_THREAD_CHECKPOINT_PAGES, assembleContext, connectRails, openDeps } from "./deps.ts";
import { createDepositWatcher } from "./deposits/watcher.ts";
import { createApp } from "./http/app.ts";
import { createMetrics } from "./http/metrics.ts";
import type { Clock } from "./ids.ts";
import { type Loop, startLoop } from "./workers/loop.ts";
import { type WebhookDeliverer, createWebhookDeliverer } from "./workers/webhookDelivery.ts";
import { type Settlement, startInlineSettlement, startSettlementThread } from "./settlement/settlement.ts";
import type { SandboxFiatProvider } from "./rails/fiat/sandboxProvider.ts";
import { type X402Demo, startX402Demo } from "./sandbox/x402Demo.ts";

export type RunningServer = {
  app: FastifyInstance;
  /** Frozen: given everything at construction (deps.ts `assembleContext`). */
  ctx: Readonly<AppContext>;
  chain: ChainRuntime | undefined;
  baseUrl: string;
  /** Sandbox with `x402Demo`: the demo x402 merchant and its facilitator. */
  x402Demo: X402Demo | undefined;
  /** What settles accepted payments (workers/settlement.ts). */
  settlement: Settlement;
  /** Sends webhook events to clients' endpoints (workers/webhookDelivery.ts). */
  webhooks: WebhookDeliverer;
  stop(): Promise<void>;
};

/**
 * Webhook events sent to clients are kept 30 days after they happened (for `webhooks deliveries` and
 * `redeliver`), then forgotten at most OUTBOX_PRUNE_MAX a minute, once none of their deliveries is pending.
 */
const OUTBOX_KEEP_MS = 30 * 86_400_000;
const OUTBOX_PRUNE_MAX = 5_000;

/** Webhook ids are remembered a day: far past the 5-minute signature tolerance. */
const WEBHOOK_ID_KEEP_MS = 24 * 3_600_000;

/** What the settlement thread runs: its body (settlementMain.ts) builds its dependencies through deps.ts. */
const SETTLEMENT_THREAD_ENTRY = new URL("./settlementThread.mjs", import.meta.url);

export type StartServerOptions = {
  defaultMetrics?: boolean;
  x402Demo?: boolean;
  /** Sandbox: where the local chain is kept (chain/runtime.ts). */
  chainState?: "file" | "memory";
  /** The clock webhook deliveries are timed by (tests step it through the retry series); default the context's. */
  webhookClock?: Clock;
};

/** Sandbox secrets for the inbound webhooks, generated once into the data directory. */
function sandboxWebhookSecrets(config: Config): void {
  const file = join(config.dataDir, "webhook-secrets.json");
  let saved: { deposit: string; fiat: string };
  if (existsSync(file)) saved = JSON.parse(readFileSync(file, "utf8"));
  else {
    saved = { deposit: `whsec_${randomBytes(24).toString("base64")}`, fiat: `whsec_${randomBytes(24).toString("base64")}` };
    writeFileSync(file, JSON.stringify(saved, null, 2), { mode: 0o600 });
  }
  config.webhooks.depositSecret ??= saved.deposit;
  config.webhooks.fiatSecret ??= saved.fiat;
}

export async function startServer(config: Config, logger: Logger, opts: StartServerOptions = {}): Promise<RunningServer> {
  const deps = await openDeps(config, logger, { serveRequests: true, checkpointPages: config.workers.settlement === "thread" ? REQUEST_THREAD_CHECKPOINT_PAGES : undefined });
  const { base } = deps;
  const metrics = createMetrics({ defaultMetrics: opts.defaultMetrics ?? true, frozenWallets: () => base.ledger.projects.countFrozen() });
  try {
    if (config.mode === "sandbox") sandboxWebhookSecrets(config);
  } catch (err) {
    await deps.close();
    throw err;
  }
  const loops: Loop[] = [];
  // Webhooks to clients: events are written by the ledger's triggers; this process sends its share.
  const d = config.webhookDelivery;
  let webhookLoop: Loop | undefined;
  const webhooks = createWebhookDeliverer(base.ledger, {
    owner: base.instanceId,
    clock: opts.webhookClock ?? base.clock,
    logger,
    mode: config.mode,
    secretKey: base.webhookSecretKey,
    maxInFlight: d.maxInFlight,
    maxInFlightPerEndpoint: d.maxInFlightPerEndpoint,
    timeoutMs: d.timeoutMs,
    leaseMs: d.leaseMs,
    disableAfterFailingMs: d.disableAfterFailingMs,
    onSlotFree: () => webhookLoop?.kick(),
  });
  webhookLoop = startLoop("webhooks", d.intervalMs, () => webhooks.tick(), logger);
  loops.push(webhookLoop);
  let chain: ChainRuntime | undefined;
  const onFinal = (rail: string, outcome: string) => metrics.payments.labels(rail, outcome).inc();
  // Started first: the thread loads its code (at a lower priority) while this one starts the chain.
  const thread = config.workers.settlement === "thread" ? startSettlementThread({ entry: SETTLEMENT_THREAD_ENTRY, config, instanceId: base.instanceId, logger, onFinal }) : undefined;
  let settlement: Settlement | undefined = thread;
  let sandboxFiat: SandboxFiatProvider | undefined;
  // Sandbox with FIAT_PROVIDER=bridge (devchain's stand-in, loaded dynamically like the chain).
  let bridgeStandIn: { setWebhookUrl(url: string): void; stop(): Promise<void> } | undefined;
  let x402Demo: X402Demo | undefined;
  /** Stops what has been started, in the order `stop()` needs; also the way out of a start-up that failed. */
  async function release(app?: { close(): Promise<unknown> }): Promise<void> {
    await Promise.all(loops.map((l) => l.stop()));
    await webhooks.drain();
    await app?.close();
    // Let accepted payments reach their first persisted step before the chain and database go.
    await settlement?.stop();
    await x402Demo?.stop();
    await bridgeStandIn?.stop();
    await chain?.sandbox?.stop();
    await deps.close();
  }
  // Assembled once everything it holds exists: the rails, settlement's hand-over, the hooks.
  let ctx: Readonly<AppContext>;
  try {
    chain = await startChainRuntime(config, { chainState: opts.chainState });
    if (chain.sandbox && config.fiat.provider === "bridge") {
      // The sandbox's way to watch the real Bridge adapter: Bridge's API stood in for on the local chain.
      const { startBridgeStandIn } = await import("@agentwallet/devchain");
      const standIn = await startBridgeStandIn({
        rpcUrl: chain.sandbox.rpcUrl,
        chainId: config.chain.chainId,
        usdcAddress: chain.client.usdcAddress,
        statePath: chain.sandbox.statePath ? join(config.dataDir, "bridge-standin.json") : undefined,
        stepMs: config.fiat.sandboxDelayMs,
      });
      bridgeStandIn = standIn;
      config.fiat.bridge = {
        apiKey: standIn.apiKey,
        customerId: standIn.customerId,
        baseUrl: standIn.url,
        webhookPublicKey: standIn.webhookPublicKey,
        checkingOrSavings: "checking",
        pollIntervalMs: 1_000,
        timeoutMs: 15_000,
        retries: 2,
        refundFromAddresses: [],
      };
    }
    const { rails, fiatRail, fiat } = await connectRails(base, chain, { offrampKey: chain.sandbox?.offrampKey, onFinal: (p, outcome) => onFinal(p.rail, outcome) });
    if (fiat?.kind === "sandbox") sandboxFiat = fiat.provider;
    const bridgeFiat = fiat?.kind === "bridge" ? fiat.provider : undefined;
    const watcher = createDepositWatcher(base.ledger, chain.client, logger, {
      chainName: "base",
      confirmations: config.chain.depositConfirmations,
      maxBlocksPerScan: config.chain.depositScanMaxBlocks,
      // A fresh sandbox chain is scanned from genesis; a live deployment starts near the head.
      startBlock: (head) => (config.mode === "sandbox" ? 0 : Math.max(0, head - config.chain.depositScanMaxBlocks)),
      onCredit: () => metrics.deposits.inc(),
      clock: base.clock,
      // The off-ramp refunds failed and returned payouts on-chain; the ledger credited those already.
      ignoreFrom: sandboxFiat ? [sandboxFiat.depositAddress] : [],
      isRefundFrom: bridgeFiat ? (from) => bridgeFiat.isRefundSender(from) : undefined,
    });
    const watchLoop = startLoop("deposits", config.workers.watcherIntervalMs, () => watcher.tick(), logger);
    loops.push(watchLoop);
    // Accepted payments settle beside the requests (workers/settlement.ts); x402 pays within its request here.
    thread?.connect(chain, { fiatBridge: config.fiat.bridge });
    const settling = thread ?? startInlineSettlement(base, rails);
    settlement = settling;
    ctx = assembleContext(deps, {
      rails,
      dispatch: (p) => settling.dispatch(p),
      hooks: {
        depositHint: async (txHash) => {
          await watcher.checkTransaction(txHash as Hex);
        },
        settlementRunning: () => settling.running(),
        fiatHint: fiatRail ? (payoutId) => fiatRail.onProviderHint(payoutId, () => settling.kick()) : undefined,
      },
    });
    // Housekeeping, bounded per pass: expired idempotency claims and kept replies, webhook ids past any replay window, old webhook events sent,
    // expired console sessions, sign-in codes and one-time views never opened.
    loops.push(
      startLoop("housekeeping", 60_000, async () => {
        await base.ledger.idempotencyKeys.pruneExpired(base.clock().toISOString());
        await base.ledger.consoleSessions.prune(base.clock().toISOString());
        await base.ledger.receivedWebhooks.prune(new Date(base.clock().getTime() - WEBHOOK_ID_KEEP_MS).toISOString());
        await base.ledger.webhooks.prune(new Date(base.clock().getTime() - OUTBOX_KEEP_MS).toISOString(), OUTBOX_PRUNE_MAX);
      }, logger),
    );
    if (opts.x402Demo && chain.sandbox) {
      x402Demo = await startX402Demo(chain, {
        dataDir: config.dataDir,
        onPortTaken: (port) => logger.warn({ port }, `the demo x402 merchant's port ${port} is taken; it listens on another one this time`),
      });
      // Exactly the loopback targets the sandbox runs itself may be paid (decisions.md, "Sandbox x402 targets").
      for (const u of [x402Demo.merchantUrl, x402Demo.facilitatorUrl]) config.x402.allowedTargets.push(new URL(u).host);
    }
  } catch (err) {
    await release();
    throw err;
  }

  const sandboxChain = chain?.sandbox;
  const app = createApp(ctx, {
    metrics,
    console: {
      webhookSecretKey: () => base.webhookSecretKey,
      ...(x402Demo ? { x402Demo: { paidUrl: x402Demo.paidUrl, priceMicros: x402Demo.priceMicros } } : {}),
      ...(sandboxChain ? { fundSandbox: async (projectId: string, amountMicros: bigint) => void (await sandboxChain.mint((await ctx.ledger.projects.get(projectId))!.wallet_address as Hex, amountMicros)) } : {}),
    },
  });
  let address: string;
  try {
    address = await app.listen({ port: config.port, host: config.host });
  } catch (err) {
    // A port taken or not ours: nothing may keep running (the settlement thread alone would keep the process alive).
    await release(app);
    throw err;
  }
  const baseUrl = config.publicBaseUrl ?? address;
  if (sandboxFiat) {
    // The sandbox off-ramp reports outcomes to our own webhook over HTTP, as a real provider would.
    sandboxFiat.setWebhookUrl(`${address}/v1/webhooks/fiat`);
    loops.push(startLoop("sandbox-fiat", 200, () => sandboxFiat!.tick(), logger));
  }
  bridgeStandIn?.setWebhookUrl(`${address}/v1/webhooks/bridge`);
  // Only a start that succeeded moves what the next start reuses (a failed second start leaves the first's).
  x402Demo?.keepPort();
  if (config.mode === "sandbox" && chain?.sandbox) {
    writeFileSync(
      join(config.dataDir, "sandbox.json"),
      JSON.stringify(
        {
          base_url: baseUrl,
          rpc_url: chain.sandbox.rpcUrl,
          chain_id: config.chain.chainId,
          usdc_address: chain.client.usdcAddress,
          relayer_address: chain.relayerAddress,
          treasury_address: chain.treasuryAddress,
          minter_private_key: chain.sandbox.accounts.deployer?.privateKey,
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
  let stopped = false;
  return {
    app,
    ctx,
    chain,
    baseUrl,
    x402Demo,
    settlement: settlement!,
    webhooks,
    async stop() {
      if (stopped) return;
      stopped = true;
      await release(app);
    },
  };
}
