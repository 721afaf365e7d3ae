/**
 * The settlement thread: its own ledger connection, custody (and signing thread), chain client and
 * rails, built by deps.ts like the request process's (without what serving requests needs), running
 * the dispatcher and the payment worker (settlement/settlement.ts) for the process that started it, under
 * that process's lease owner. Payments arrive by message; every state it needs is in the database.
 */
import { parentPort, workerData } from "node:worker_threads";
import { createChainClient } from "./chain/chainClient.ts";
import type { ChainRuntime } from "./chain/runtime.ts";
import { connectRails, createLogger, openDeps } from "./deps.ts";
import { type SettlementChain, type SettlementCommand, type SettlementMessage, type SettlementThreadData, startInlineSettlement } from "./settlement/settlement.ts";

const data = workerData as SettlementThreadData;
const port = parentPort!;
const post = (m: SettlementMessage) => port.postMessage(m);
const { config } = data;
const logger = createLogger(data.logLevel).child({ thread: "settlement" });

/** How often this thread checkpoints the SQLite WAL for the request thread (deps.ts). */
const CHECKPOINT_EVERY_MS = 200;

/** Opens the ledger, custody and chain, and starts following payments. */
async function start(chainData: SettlementChain) {
  const deps = await openDeps(config, logger, { serveRequests: false, instanceId: data.instanceId });
  const { ledger } = deps.base;
  // PASSIVE: copies what it can without taking the write lock, so the request thread never waits for it.
  const checkpoints =
    ledger.dialect === "sqlite"
      ? setInterval(() => void ledger.checkpointWal().catch((err) => logger.warn({ err }, "WAL checkpoint failed; the next one retries")), CHECKPOINT_EVERY_MS)
      : undefined;
  const client = createChainClient(chainData.settings);
  const chain: ChainRuntime = { client, relayerKey: chainData.relayerKey, relayerAddress: chainData.relayerAddress, treasuryAddress: chainData.treasuryAddress };
  // The sandbox off-ramp keeps its payouts in the ledger; this instance submits and reads them, the
  // request thread's delivers their webhooks.
  const { rails } = await connectRails(deps.base, chain, { offrampKey: chainData.offrampKey, bridge: chainData.fiatBridge, onFinal: (p, outcome) => post({ type: "final", rail: p.rail, outcome }) });
  const settlement = startInlineSettlement(deps.base, rails);
  return {
    settlement,
    async close() {
      clearInterval(checkpoints);
      await settlement.stop();
      await deps.close();
    },
  };
}

let running: ReturnType<typeof start> | undefined;
port.on("message", (cmd: SettlementCommand) => {
  if (cmd.type === "start") {
    if (running) return;
    running = start(cmd.chain);
    // A thread that cannot start dies; the request thread logs it and starts another.
    running.then(
      () => post({ type: "ready" }),
      (err) => {
        logger.error({ err }, "settlement thread could not start");
        process.exit(1);
      },
    );
  } else if (cmd.type === "dispatch") void running?.then((r) => cmd.payments.forEach((p) => r.settlement.dispatch(p)));
  else if (cmd.type === "kick") void running?.then((r) => r.settlement.kick());
  else if (cmd.type === "stop") {
    void (async () => {
      try {
        await (await running)?.close();
      } catch (err) {
        logger.error({ err }, "settlement thread did not close cleanly");
      }
      post({ type: "stopped" });
    })();
  }
});
