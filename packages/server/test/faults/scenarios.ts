/**
 * The fault scenarios, each in a world of its own (chain, proxy, merchants, server, database), so one
 * scenario's damage never leaks into the next. Every random choice comes from the suite's seed,
 * printed with each scenario; FAULT_SEED=<seed> replays a run.
 */
import { statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, test } from "vitest";
import type { TestDialect } from "../support/db.ts";
import { type FaultWorld, PAYMENT_CONFIRMATIONS, type Project, startFaultWorld } from "./support/faultWorld.ts";
import { checkInvariants } from "./support/invariants.ts";
import type { SendFault } from "./support/rpcProxy.ts";
import { createRng, type Rng, suiteSeed } from "./support/rng.ts";
import { type Answer, type Kind, planStream, runStream, type Spec } from "./support/stream.ts";
import { openPayments } from "../../src/ledger/testing.ts";

const seed = suiteSeed();
const PAYMENTS = 8;
const KILLS = 2;
/** A scenario: its world's start, the stream, the faults and the checks; on two shared cores. */
const SCENARIO_TIMEOUT_MS = 900_000;
/**
 * Where the chain itself loses our transactions (kill -9 of anvil, rollbacks) the stream holds the rails
 * whose every transaction is the relayer's: usdc_transfer and bank payouts that complete. An x402
 * settlement is the merchant's facilitator's transaction, and a sandbox off-ramp refund is the
 * provider's: an x402 settlement the chain lost is paid again only once its authorization expired (its
 * own scenario below), and a sandbox refund is not sent again.
 */
const RELAYED: Kind[] = ["usdc", "usdc", "fiat_ok"];

/**
 * Each scenario runs on one ledger by default (the two share the cores of one `npm test`), the ledgers
 * taking turns; FAULT_DIALECTS=all runs every scenario on both.
 */
function on(dialect: TestDialect, home: TestDialect) {
  return test.skipIf(process.env.FAULT_DIALECTS !== "all" && dialect !== home);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Run = { world: FaultWorld; rng: Rng; projects: Project[] };

async function setup(dialect: TestDialect, scenario: string, projects = 2): Promise<Run> {
  console.log(`fault scenario "${scenario}" on ${dialect}: FAULT_SEED=${seed}`);
  const world = await startFaultWorld(dialect, seed, scenario);
  worlds.push(world);
  const rng = createRng(seed).fork(`${scenario}/driver`);
  const ps: Project[] = [];
  // Enough for every payment of the stream to land on one project (12 bank payments of up to $4 and
  // their fees): a refusal for the balance would be the driver's doing, not the service's.
  for (let i = 0; i < projects; i++) ps.push(await world.newProject(`${scenario}-${i}`, 80_000_000n));
  return { world, rng, projects: ps };
}

/**
 * The chain writes its state file once a second; a kill -9 loses what came after the last write. The
 * funding deposits are the scenario's premise, not its subject: wait until a write has them.
 */
async function chainStateHasSettled(world: FaultWorld): Promise<void> {
  const file = join(world.dir, "chain-state.json");
  const since = Date.now();
  const end = since + 30_000;
  for (;;) {
    try {
      if (statSync(file).mtimeMs > since + 100) return;
    } catch {
      /* not written yet */
    }
    if (Date.now() > end) throw new Error("the chain did not write its state file within 30 s");
    await sleep(100);
  }
}

/**
 * The stream, paced, with `faults` faults at random moments from its start (each after the previous
 * one has recovered): while payments are being accepted, or settled after the last was accepted.
 */
async function streamWithFaults(run: Run, kinds: Kind[] | undefined, fault: (i: number) => Promise<void>, faults = KILLS): Promise<{ specs: Spec[]; answers: Answer[] }> {
  const specs = planStream(run.world, run.rng.fork("plan"), run.projects, PAYMENTS, kinds);
  const streaming = runStream(run.world, specs, { rng: run.rng.fork("pace"), gapMs: [50, 400] });
  for (let i = 0; i < faults; i++) {
    await sleep(run.rng.int(300, 2_000));
    await fault(i);
  }
  return { specs, answers: await streaming };
}

/** Waits (bounded) until no payment is pending or processing; answers how many still are. */
async function untilSettled(world: FaultWorld, ms: number): Promise<number> {
  const over = world.within(ms);
  for (;;) {
    const open = await openPayments(world.ledger);
    if (open.length === 0 || over()) return open.length;
    await sleep(200);
  }
}

const worlds: FaultWorld[] = [];

/** Payments complete, the chain mines past the confirmation depth, then goes back to before them. */
async function rollback(dialect: TestDialect, scenario: string, kinds: Kind[]): Promise<void> {
  const run = await setup(dialect, scenario);
  const snapshot = await run.world.chain.snapshot();
  const specs = planStream(run.world, run.rng.fork("plan"), run.projects, PAYMENTS, kinds);
  const answers = await runStream(run.world, specs);
  const open = await untilSettled(run.world, 90_000);
  if (open) throw new Error(`${open} payment(s) still open before the rollback (seed ${seed})`);
  await run.world.chain.mine(PAYMENT_CONFIRMATIONS + 3);
  run.world.log(`payments final; reverting to snapshot ${snapshot}`);
  if (!(await run.world.chain.revert(snapshot))) throw new Error("evm_revert refused the snapshot");
  const { summary } = await checkInvariants(run.world, { seed, scenario, specs, answers });
  console.log(`${scenario} on ${dialect}: ${summary}`);
}

async function rpcFaults(run: Run, dialect: TestDialect, scenario: string, send: SendFault[]): Promise<void> {
  run.world.proxy.setFaults({ send: { p: 0.3, kinds: send }, receipt: { p: 0.3, kinds: ["null", "hangup", "error", "delay"] }, delayMs: 1_500 });
  run.world.log("proxy faults on");
  const specs = planStream(run.world, run.rng.fork("plan"), run.projects, PAYMENTS);
  const answers = await runStream(run.world, specs, { rng: run.rng.fork("pace"), gapMs: [50, 400] });
  // Faults stay on while the payments settle (bounded), then the chain answers cleanly again.
  await untilSettled(run.world, 30_000);
  run.world.proxy.setFaults(undefined);
  run.world.log(`proxy faults off; injected ${JSON.stringify(run.world.proxy.injected())}`);
  const { summary } = await checkInvariants(run.world, { seed, scenario, specs, answers });
  console.log(`${scenario} on ${dialect}: ${summary}; injected ${JSON.stringify(run.world.proxy.injected())}`);
}

export function defineFaultSuite(dialect: TestDialect): void {
  describe(`fault injection on ${dialect} (seed ${seed})`, () => {
    afterEach(async () => {
      while (worlds.length) await worlds.pop()!.stop();
    });

    on(dialect, "sqlite")("kill -9 of the server at random points during a stream of payments of every rail", async () => {
      const run = await setup(dialect, "kill-server");
      const { specs, answers } = await streamWithFaults(run, undefined, async () => {
        await run.world.killServer();
        await sleep(run.rng.int(0, 500));
        await run.world.restartServer();
      });
      const { summary } = await checkInvariants(run.world, { seed, scenario: "kill-server", specs, answers });
      console.log(`kill-server on ${dialect}: ${summary}`);
    }, SCENARIO_TIMEOUT_MS);

    on(dialect, "postgres")("kill -9 of the chain at random points: it restarts from its state file without its last second", async () => {
      const run = await setup(dialect, "kill-chain");
      await chainStateHasSettled(run.world);
      const { specs, answers } = await streamWithFaults(run, RELAYED, async () => {
        await run.world.killChain();
        await sleep(run.rng.int(100, 1_000));
        await run.world.restartChain();
      });
      const { summary } = await checkInvariants(run.world, { seed, scenario: "kill-chain", specs, answers });
      console.log(`kill-chain on ${dialect}: ${summary}`);
    }, SCENARIO_TIMEOUT_MS);

    on(dialect, "sqlite")("kill -9 of both the server and the chain at random points", async () => {
      const run = await setup(dialect, "kill-both");
      await chainStateHasSettled(run.world);
      const { specs, answers } = await streamWithFaults(run, RELAYED, async () => {
        await Promise.all([run.world.killServer(), run.world.killChain()]);
        await sleep(run.rng.int(100, 800));
        await run.world.restartChain();
        await run.world.restartServer();
      });
      const { summary } = await checkInvariants(run.world, { seed, scenario: "kill-both", specs, answers });
      console.log(`kill-both on ${dialect}: ${summary}`);
    }, SCENARIO_TIMEOUT_MS);

    on(dialect, "postgres")("an RPC that errors, hangs up, delays or loses the answer of eth_sendRawTransaction and of receipts", async () => {
      const run = await setup(dialect, "rpc-faults");
      await rpcFaults(run, dialect, "rpc-faults", ["hangup", "error", "landed_error", "delay"]);
    }, SCENARIO_TIMEOUT_MS);

    on(dialect, "sqlite")("an RPC that drops transactions (accepted, never mined, as from a mempool)", async () => {
      const run = await setup(dialect, "rpc-drops");
      await rpcFaults(run, dialect, "rpc-drops", ["swallow"]);
    }, SCENARIO_TIMEOUT_MS);

    on(dialect, "postgres")(`a chain rollback deeper than the confirmation depth (${PAYMENT_CONFIRMATIONS}) after the payments completed`, async () => {
      await rollback(dialect, "rollback", RELAYED);
    }, SCENARIO_TIMEOUT_MS);

    // An x402 payment is completed on the facilitator's transaction: the rollback takes it away, and once
    // the authorization expired unused the service pays the merchant again (settlement/lostLegs.ts).
    on(dialect, "postgres")("a chain rollback after x402 payments completed: the merchants are paid again", async () => {
      await rollback(dialect, "rollback-x402", ["x402_v1", "x402_v2"]);
    }, SCENARIO_TIMEOUT_MS);

    on(dialect, "postgres")("a bank provider that fails and returns payouts, with a server kill in between", async () => {
      const run = await setup(dialect, "fiat-provider");
      const { specs, answers } = await streamWithFaults(
        run,
        ["fiat_ok", "fiat_fail", "fiat_return", "fiat_return"],
        async () => {
          await run.world.killServer();
          await run.world.restartServer();
        },
        1,
      );
      const { summary } = await checkInvariants(run.world, { seed, scenario: "fiat-provider", specs, answers });
      console.log(`fiat-provider on ${dialect}: ${summary}`);
    }, SCENARIO_TIMEOUT_MS);
  });
}
