/**
 * Settlement: what moves accepted payments to their final state. The dispatcher follows each payment
 * from the moment its request answered; the payment worker claims whatever is due and resumes
 * payments after a crash. Both run either on the request thread (`inline`) or in a thread of their
 * own (`thread`, the default) with their own database connection, chain client and signer, so a
 * settling backlog never takes the event loop that accepts requests. Nothing is handed over in
 * memory that the database does not also hold: a payment sent to a thread that dies is still leased
 * in the ledger, and the worker takes it up when the lease expires.
 */
import type { BridgeSettings } from "../rails/fiat/bridgeProvider.ts";
import { Worker } from "node:worker_threads";
import type { Logger } from "pino";
import type { Address, Hex } from "viem";
import type { Config } from "../config.ts";
import type { ChainSettings } from "../chain/chainClient.ts";
import type { ChainRuntime } from "../chain/runtime.ts";
import type { Payment } from "../domain/payment.ts";
import type { RailDeps } from "../rails/railDeps.ts";
import type { Rails } from "../rails/rails.ts";
import { createDispatcher } from "./dispatcher.ts";
import { resendLostLegs, resendLostX402Settlements } from "./lostLegs.ts";
import { startLoop } from "../workers/loop.ts";
import { createPaymentWorker, startPaymentWorkerLoop } from "./paymentWorker.ts";

export type Settlement = {
  /** Hands over a payment just accepted under this process's lease. */
  dispatch(payment: Payment): void;
  /** Asks for a worker pass now (a provider reported a change). */
  kick(): void;
  /** Stops following payments (leases expire to the next process), waits for the steps under way, closes. */
  stop(): Promise<void>;
  /** The settlement thread now running, if settlement runs in one (health checks, tests). */
  thread(): Worker | undefined;
  /** Resolves once settlement follows payments (at once inline; a thread once it has opened everything). */
  ready(): Promise<void>;
  /** Whether settlement follows payments now. */
  running(): boolean;
};

/** The dispatcher and the worker loop on the calling thread. */
export function startInlineSettlement(ctx: RailDeps, rails: Rails): Settlement {
  const dispatcher = createDispatcher(ctx, rails);
  const loop = startPaymentWorkerLoop(createPaymentWorker(ctx, rails), ctx.config.workers.workerIntervalMs, ctx.logger);
  // Nonces the chain lost would hold back every later relayer transaction: filled here (relayer.ts, "Gaps").
  // Completed payments whose lost transaction could only be replaced are then sent again (lostLegs.ts).
  const gaps = startLoop("relayer-gaps", ctx.config.chain.relayerGapCheckMs, async () => {
    await rails.relayer.closeGaps();
    await resendLostLegs({ ctx, chain: rails.chain, relayer: rails.relayer });
  }, ctx.logger);
  // x402 settlements are the facilitators' transactions: looked for on their own, less often.
  const lostSettlements = startLoop("lost-x402-settlements", ctx.config.chain.lostSettlementCheckMs, async () => {
    await resendLostX402Settlements({ ctx, chain: rails.chain, relayer: rails.relayer });
  }, ctx.logger);
  // Completed bank payments the off-ramp may still return (rails/fiat/returnWatch.ts): one process at a time by lease.
  const returns = rails.watchReturns ? startLoop("bank-returns", ctx.config.fiat.returnWatch.intervalMs, () => rails.watchReturns!(() => loop.kick()), ctx.logger) : undefined;
  return {
    dispatch: (p) => dispatcher.submit(p),
    kick: () => loop.kick(),
    async stop() {
      await returns?.stop();
      await gaps.stop();
      await lostSettlements.stop();
      await loop.stop();
      await dispatcher.drain();
    },
    thread: () => undefined,
    ready: () => Promise.resolve(),
    running: () => true,
  };
}

/** What the settlement thread is started with (structured-cloned; it never leaves the process). */
export type SettlementThreadData = {
  config: Config;
  /** The lease owner of payments accepted here: the thread continues them under the same lease. */
  instanceId: string;
  logLevel: string;
  /** The thread's CPU priority on Linux (nice value: higher yields to the request thread). */
  nice: number;
};

/** The chain side, sent once the request thread has it (the thread loads its code meanwhile). */
export type SettlementChain = { settings: ChainSettings; relayerKey: Hex; relayerAddress: Address; treasuryAddress: Address; offrampKey: Hex | undefined; fiatBridge?: BridgeSettings };

export type SettlementMessage = { type: "ready" } | { type: "final"; rail: string; outcome: string } | { type: "stopped" };
export type SettlementCommand = { type: "start"; chain: SettlementChain } | { type: "dispatch"; payments: Payment[] } | { type: "kick" } | { type: "stop" };

/** Settlement yields the cores to requests when both want them (nice 10: about a tenth of a contended core). */
export const SETTLEMENT_NICE = 10;
/** A thread that dies is started again after this long, doubling up to the maximum while it keeps dying. */
const RESTART_DELAY_MS = 1_000;
const RESTART_DELAY_MAX_MS = 30_000;
/** A thread that ran this long before dying starts the back-off over. */
const HEALTHY_AFTER_MS = 60_000;
/** How long `stop()` waits for the steps under way before ending the thread. */
const STOP_TIMEOUT_MS = 15_000;
/** At most this many dispatched payments wait for a thread that is not ready (the rest wait for their lease). */
const PENDING_MAX = 1_024;

export type SettlementThreadOptions = {
  /** The module the thread runs (settlementThread.mjs beside server.ts): named by the wiring, which builds the thread's dependencies. */
  entry: URL;
  config: Config;
  instanceId: string;
  logger: Logger;
  onFinal?: (rail: string, outcome: string) => void;
};

export type SettlementThread = Settlement & {
  /** Gives the thread the chain; it follows payments once it has opened everything (`ready`). */
  connect(chain: ChainRuntime, extra?: { fiatBridge?: BridgeSettings }): void;
};

/**
 * Settlement in a thread of its own. The thread is started at once, at a lower CPU priority (it loads
 * its code while the process starts, without taking the cores from it), and follows payments once
 * `connect` has given it the chain and it has opened everything. Payments accepted before it is ready
 * are handed over when it is (up to PENDING_MAX; any others wait for their lease). A thread that
 * dies, starting or later, is logged and started again with back-off. Payments accepted in one turn
 * of the event loop are handed over in one message.
 */
export function startSettlementThread(o: SettlementThreadOptions): SettlementThread {
  const data: SettlementThreadData = { config: o.config, instanceId: o.instanceId, logLevel: o.logger.level, nice: SETTLEMENT_NICE };
  let chain: SettlementChain | undefined;
  let thread: Worker | undefined;
  let isReady = false;
  let stopping = false;
  let restartDelay = RESTART_DELAY_MS;
  let restartTimer: NodeJS.Timeout | undefined;
  let outgoing: Payment[] = [];
  let onStopped: (() => void) | undefined;
  let readyWaiters: (() => void)[] = [];

  const send = (cmd: SettlementCommand) => thread?.postMessage(cmd);
  function flush(): void {
    if (!isReady || outgoing.length === 0) return;
    const payments = outgoing;
    outgoing = [];
    send({ type: "dispatch", payments });
  }

  function spawn(): void {
    // tsx is registered by the entry itself: the thread runs the same TypeScript sources however the process was started.
    const t = new Worker(o.entry, { workerData: data, execArgv: [] });
    const startedAt = Date.now();
    thread = t;
    if (chain) send({ type: "start", chain });
    t.on("message", (m: SettlementMessage) => {
      if (m.type === "ready") {
        isReady = true;
        flush();
        const waiters = readyWaiters;
        readyWaiters = [];
        for (const w of waiters) w();
      } else if (m.type === "final") o.onFinal?.(m.rail, m.outcome);
      else if (m.type === "stopped") onStopped?.();
    });
    t.on("error", (err) => o.logger.error({ err }, "settlement thread failed"));
    t.on("exit", (code) => {
      if (thread === t) {
        thread = undefined;
        isReady = false;
      }
      onStopped?.();
      if (stopping) return;
      if (Date.now() - startedAt >= HEALTHY_AFTER_MS) restartDelay = RESTART_DELAY_MS;
      o.logger.error({ code, restart_in_ms: restartDelay }, "settlement thread exited; starting it again (its payments resume when their leases expire)");
      restartTimer = setTimeout(() => {
        restartTimer = undefined;
        if (!stopping) spawn();
      }, restartDelay);
      restartDelay = Math.min(RESTART_DELAY_MAX_MS, restartDelay * 2);
    });
  }

  spawn();

  return {
    connect(runtime, extra) {
      if (chain || stopping) return;
      chain = { settings: runtime.client.settings, relayerKey: runtime.relayerKey, relayerAddress: runtime.relayerAddress, treasuryAddress: runtime.treasuryAddress, offrampKey: runtime.sandbox?.offrampKey, fiatBridge: extra?.fiatBridge };
      send({ type: "start", chain });
    },
    ready: () => (isReady ? Promise.resolve() : new Promise((r) => readyWaiters.push(r))),
    running: () => isReady,
    dispatch(p) {
      if (stopping || outgoing.length >= PENDING_MAX) return;
      outgoing.push(p);
      if (outgoing.length === 1) setImmediate(flush);
    },
    kick() {
      if (isReady) send({ type: "kick" });
    },
    thread: () => thread,
    async stop() {
      if (stopping) return;
      stopping = true;
      if (restartTimer) clearTimeout(restartTimer);
      const t = thread;
      if (!t) return;
      // Still starting: it follows no payment yet (those handed over wait for their lease), so nothing to drain.
      if (!isReady) return void (await t.terminate());
      flush();
      const stopped = new Promise<void>((r) => {
        onStopped = r;
      });
      send({ type: "stop" });
      const timer = setTimeout(() => onStopped?.(), STOP_TIMEOUT_MS);
      await stopped;
      clearTimeout(timer);
      await t.terminate();
    },
  };
}
