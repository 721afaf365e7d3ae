/**
 * Starts the service: its dependencies (deps.ts), chain, rails, background loops, and the HTTP app, in
 * that order, so the context the app is given is whole and frozen. The configuration arrives settled and
 * frozen (config.ts); the sandbox works its own out before calling this (sandbox/startSandbox.ts), so this
 * start-up is the live one. The only module that listens on a port. `stop()` ends the loops, closes the
 * app, then the database.
 */
import type { FastifyInstance } from "fastify";
import type { Logger } from "pino";
import type { Hex } from "viem";
import type { Config } from "./config.ts";
import type { AppContext } from "./context.ts";
import { type ChainRuntime, startChainRuntime } from "./chain/runtime.ts";
import { REQUEST_THREAD_CHECKPOINT_PAGES, assembleContext, connectRails, openDeps } from "./deps.ts";
import { createDepositWatcher, depositCursorKey } from "./deposits/watcher.ts";
import { createApp } from "./http/app.ts";
import { createMetrics } from "./http/metrics.ts";
import { type HealthSignals, createHealthSignals } from "./services/healthSignals.ts";
import type { Clock } from "./ids.ts";
import { type Loop, startLoop } from "./workers/loop.ts";
import { type WebhookDeliverer, createWebhookDeliverer } from "./workers/webhookDelivery.ts";
import { type Settlement, startInlineSettlement, startSettlementThread } from "./settlement/settlement.ts";
import type { SandboxFiatProvider } from "./rails/fiat/sandboxProvider.ts";
import { pruneAudit } from "./services/audit.ts";
import { AUTHORIZATION_VALIDITY_SECONDS } from "./rails/onchainLeg.ts";
import type { AfterAnswer } from "./services/payments/paymentContext.ts";

export type RunningServer = {
  app: FastifyInstance;
  /** Frozen: given everything at construction (deps.ts `assembleContext`). */
  ctx: Readonly<AppContext>;
  chain: ChainRuntime;
  /** PUBLIC_BASE_URL, or the address the app listens on. */
  baseUrl: string;
  /** The address the app listens on (where the sandbox's own services send their webhooks). */
  listenUrl: string;
  /** What settles accepted payments (settlement/settlement.ts). */
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

/**
 * A relayer transaction's signed bytes are kept a day, then forgotten at most RELAYER_BYTES_FORGET_MAX a minute: far
 * past the hour its authorizations are valid, after which it could only be replaced by a no-op (decisions.md,
 * "Signed relayer transactions are forgotten").
 */
const RELAYER_BYTES_KEEP_MS = 24 * 3_600_000;
const RELAYER_BYTES_FORGET_MAX = 5_000;
if (RELAYER_BYTES_KEEP_MS < 2 * AUTHORIZATION_VALIDITY_SECONDS * 1000) throw new Error("relayer transactions would be forgotten while their authorizations may still be valid");

/** What the settlement thread runs: its body (settlementMain.ts) builds its dependencies through deps.ts. */
const SETTLEMENT_THREAD_ENTRY = new URL("./settlementThread.mjs", import.meta.url);

export type StartServerOptions = {
  defaultMetrics?: boolean;
  /**
   * The chain, when its starter owns it (the sandbox's local chain, sandbox/startSandbox.ts, which stops it
   * after the server). Without it, the live chain of the configuration is connected here.
   */
  chain?: ChainRuntime;
  /** The sandbox's demo x402 merchant, offered by the console. */
  demoMerchant?: { paidUrl: string; priceMicros: number };
  /** The clock webhook deliveries are timed by (tests step it through the retry series); default the context's. */
  webhookClock?: Clock;
};

/** The chain the deposit watcher keeps its cursor under. */
const WATCHED_CHAIN = "base";

export async function startServer(config: Config, logger: Logger, opts: StartServerOptions = {}): Promise<RunningServer> {
  // A sandbox's chain, demo merchant and secrets are its own to start (sandbox/startSandbox.ts), before this.
  if (config.mode === "sandbox" && !opts.chain) throw new Error("a sandbox configuration is started by sandbox/startSandbox.ts, which brings its chain");
  const deps = await openDeps(config, logger, { serveRequests: true, checkpointPages: config.workers.settlement === "thread" ? REQUEST_THREAD_CHECKPOINT_PAGES : undefined });
  const { base } = deps;
  // The health gauges answer once the chain and the deposit watcher exist (below).
  let health: HealthSignals | undefined;
  const metrics = createMetrics({ defaultMetrics: opts.defaultMetrics ?? true, frozenWallets: () => base.ledger.projects.countFrozen(), health: () => health });
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
    privateTargets: config.privateTargets,
    maxInFlight: d.maxInFlight,
    maxInFlightPerEndpoint: d.maxInFlightPerEndpoint,
    timeoutMs: d.timeoutMs,
    leaseMs: d.leaseMs,
    disableAfterFailingMs: d.disableAfterFailingMs,
    onSlotFree: () => webhookLoop?.kick(),
  });
  webhookLoop = startLoop("webhooks", d.intervalMs, () => webhooks.tick(), logger);
  loops.push(webhookLoop);
  let chain: ChainRuntime | undefined = opts.chain;
  const onFinal = (rail: string, outcome: string) => metrics.payments.labels(rail, outcome).inc();
  // Started first: the thread loads its code (at a lower priority) while this one connects the chain and rails.
  const thread = config.workers.settlement === "thread" ? startSettlementThread({ entry: SETTLEMENT_THREAD_ENTRY, config, instanceId: base.instanceId, logger, onFinal }) : undefined;
  let settlement: Settlement | undefined = thread;
  let sandboxFiat: SandboxFiatProvider | undefined;
  const afterAnswers = trackedWork(logger);
  /** Stops what has been started, in the order `stop()` needs; also the way out of a start-up that failed. */
  async function release(app?: { close(): Promise<unknown> }): Promise<void> {
    await Promise.all(loops.map((l) => l.stop()));
    await webhooks.drain();
    await app?.close();
    // What requests left to do after their answers (each catches its own failure).
    await afterAnswers.drain();
    // Let accepted payments reach their first persisted step before the chain and database go.
    await settlement?.stop();
    await deps.close();
  }
  // Assembled once everything it holds exists: the rails, settlement's hand-over, the hooks.
  let ctx: Readonly<AppContext>;
  try {
    chain ??= await startChainRuntime(config);
    const { rails, fiatRail, fiat } = await connectRails(base, chain, { offrampKey: chain.sandbox?.offrampKey, onFinal: (p, outcome) => onFinal(p.rail, outcome) });
    if (fiat?.kind === "sandbox") sandboxFiat = fiat.provider;
    const bridgeFiat = fiat?.kind === "bridge" ? fiat.provider : undefined;
    const watcher = createDepositWatcher(base.ledger, chain.client, logger, {
      chainName: WATCHED_CHAIN,
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
    health = createHealthSignals({ ledger: base.ledger, chain: chain.client, relayerAddress: chain.relayerAddress, depositCursorKey: depositCursorKey(WATCHED_CHAIN), depositConfirmations: config.chain.depositConfirmations, now: base.clock });
    const watchLoop = startLoop("deposits", config.workers.watcherIntervalMs, () => watcher.tick(), logger);
    loops.push(watchLoop);
    // Accepted payments settle beside the requests (settlement/settlement.ts); x402 pays within its request here.
    thread?.connect(chain);
    const settling = thread ?? startInlineSettlement(base, rails);
    settlement = settling;
    ctx = assembleContext(deps, {
      rails,
      dispatch: (p) => settling.dispatch(p),
      afterAnswer: { run: afterAnswers.run, pending: afterAnswers.pending },
      hooks: {
        depositHint: async (txHash) => {
          await watcher.checkTransaction(txHash as Hex);
        },
        settlementRunning: () => settling.running(),
        fiatHint: fiatRail ? (payoutId) => fiatRail.onProviderHint(payoutId, () => settling.kick()) : undefined,
      },
    });
    // Housekeeping, bounded per pass: expired idempotency claims and kept replies, webhook ids past any replay window, old webhook events sent,
    // expired console sessions, sign-in codes and one-time views never opened, expired quotes, relayer transactions' signed bytes
    // past any use, audit entries past their retention.
    loops.push(
      startLoop("housekeeping", 60_000, async () => {
        await base.ledger.idempotencyKeys.pruneExpired(base.clock().toISOString());
        await base.ledger.consoleSessions.prune(base.clock().toISOString());
        await base.ledger.receivedWebhooks.prune(new Date(base.clock().getTime() - WEBHOOK_ID_KEEP_MS).toISOString());
        await base.ledger.webhooks.prune(new Date(base.clock().getTime() - OUTBOX_KEEP_MS).toISOString(), OUTBOX_PRUNE_MAX);
        await base.ledger.quotes.prune(base.clock().toISOString());
        await base.ledger.relayerNonces.forgetSignedBytes(new Date(base.clock().getTime() - RELAYER_BYTES_KEEP_MS).toISOString(), RELAYER_BYTES_FORGET_MAX);
        await pruneAudit(base, config.audit.retentionDays);
      }, logger),
    );
  } catch (err) {
    await release();
    throw err;
  }

  const sandboxChain = chain?.sandbox;
  const app = createApp(ctx, {
    metrics,
    console: {
      webhookSecretKey: () => base.webhookSecretKey,
      ...(opts.demoMerchant ? { x402Demo: opts.demoMerchant } : {}),
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
  let stopped = false;
  return {
    app,
    ctx,
    chain: chain!,
    baseUrl,
    listenUrl: address,
    settlement: settlement!,
    webhooks,
    async stop() {
      if (stopped) return;
      stopped = true;
      await release(app);
    },
  };
}

/**
 * Work a request does after its answer has left, kept until it ends so that a stop can wait for it. It starts
 * in the event loop's next check phase, once the answer has been written to its socket: a SQLite write runs its
 * statements on this thread as soon as it is asked for, which would otherwise come before the answer. A failure
 * the work does not handle itself is logged: nobody awaits it any more.
 */
function trackedWork(logger: Logger): AfterAnswer & { drain(): Promise<void> } {
  const running = new Map<string, Promise<void>>();
  return {
    run(key, work) {
      const p: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
        .then(work)
        .then(
          () => undefined,
          (err: unknown) => logger.error({ err, work: key }, "work after an answer failed"),
        )
        .finally(() => {
          if (running.get(key) === p) running.delete(key);
        });
      running.set(key, p);
    },
    pending: (key) => running.get(key),
    async drain() {
      while (running.size > 0) await Promise.all(running.values());
    },
  };
}
