/**
 * `npm run bench -- pay --db postgres --behind nginx`: POST /v1/pay (usdc_transfer) as the default run loads it, on
 * one `agentwallet serve` process reached directly, then through nginx with TLS in front of two (behindNginx.ts),
 * each run followed until its payments completed on-chain. Prints accepted per second (and its latency, and settled
 * per second) beside the proxy/direct ratio, and writes the result file.
 */
import type { Address } from "viem";
import { getDepositAddress } from "../../packages/server/src/services/getDepositAddress.ts";
import { createToken } from "../../packages/server/src/services/tokens.ts";
import { type Cell, log, machine, printTable, writeResult } from "../lib.ts";
import { createBenchContext } from "./benchContext.ts";
import { type BehindNginx, startBehindNginx } from "./behindNginx.ts";
import { type PayRun, completedPayments, payAndSettle } from "./payLoad.ts";

/** 10,000 USDC: enough for ~980,000 payments, as the default run funds. */
const FUNDING_MICROS = 10_000_000_000n;
/** The deposit watcher polls every 2 s by default and waits for one confirmation. */
const CREDIT_WAIT_MS_MAX = 120_000;

export type PayBehindOptions = { duration: number; connections: number; settleTimeoutS: number; settlement: string; env: NodeJS.ProcessEnv };

type Run = PayRun & { completed: number; acceptedPerSec: number; settledPerSec: number };

export async function payBehindNginx(o: PayBehindOptions): Promise<void> {
  const bench = await createBenchContext({ dialect: "postgres", rateLimitPerMinute: Number(o.env.RATE_LIMIT_PER_MINUTE), logLevel: String(o.env.LOG_LEVEL) });
  let shape: BehindNginx | undefined;
  try {
    log(`database: ${bench.where}`);
    const project = await bench.ctx.ledger.projects.create({ name: "bench", plan: "free" });
    const { address } = await getDepositAddress(bench.ctx, project.id);
    shape = await startBehindNginx({ databaseUrl: bench.postgresUrl!, env: o.env });
    const token = (await createToken(bench.ctx, { projectId: project.id, permissions: ["read", "pay", "x402"], mode: "live" })).token;
    log("funding the project on the local chain…");
    await credited(bench, await shape.chain.mint(address as Address, FUNDING_MICROS));

    const runOn = async (baseUrl: string): Promise<Run> => {
      const before = await completedPayments(bench.ctx.ledger);
      const run = await payAndSettle({ baseUrl, tokens: [token], connections: o.connections, duration: o.duration, settleTimeoutS: o.settleTimeoutS, ledger: bench.ctx.ledger });
      const completed = (await completedPayments(bench.ctx.ledger)) - before;
      return { ...run, completed, acceptedPerSec: run.pay.ok / ((run.acceptedAt - run.startedAt) / 1000), settledPerSec: completed / ((run.settledAt - run.startedAt) / 1000) };
    };
    log(`POST /v1/pay (usdc_transfer) direct to one process, ${o.connections} connections, ${o.duration} s…`);
    const direct = await runOn(shape.directUrl);
    const proxyUrl = await shape.addProxy();
    log(`POST /v1/pay through nginx to two processes, ${o.connections} connections, ${o.duration} s…`);
    const nginx = await runOn(proxyUrl);

    const ratio = (a: number, b: number) => (b > 0 ? `${(a / b).toFixed(2)}×` : "-");
    const rows: Cell[][] = [
      ["POST /v1/pay accepted (201) per second", Math.round(direct.acceptedPerSec), Math.round(nginx.acceptedPerSec), ratio(nginx.acceptedPerSec, direct.acceptedPerSec)],
      ["POST /v1/pay p50 ms under load", direct.pay.p50Ms, nginx.pay.p50Ms, ratio(nginx.pay.p50Ms, direct.pay.p50Ms)],
      ["POST /v1/pay p99 ms under load", direct.pay.p99Ms, nginx.pay.p99Ms, ratio(nginx.pay.p99Ms, direct.pay.p99Ms)],
      ["settled on-chain (completed) per second", Math.round(direct.settledPerSec), Math.round(nginx.settledPerSec), ratio(nginx.settledPerSec, direct.settledPerSec)],
    ];
    console.log(`\nmachine: ${JSON.stringify(machine())}`);
    printTable(["measure", "direct, 1 process", "nginx + TLS, 2 processes", "proxy/direct"], rows);
    for (const [name, r] of [["direct", direct], ["nginx", nginx]] as const) {
      console.log(`${name}: ${r.completed} of ${r.pay.ok} accepted completed in ${((r.settledAt - r.startedAt) / 1000).toFixed(1)} s; ${r.pay.non2xx} non-2xx, ${r.pay.errors} errors`);
    }
    const stillOpen = direct.open + nginx.open;
    if (stillOpen > 0) console.log(`WARNING: ${stillOpen} payments still open after ${o.settleTimeoutS} s`);
    const file = writeResult("pay-postgres-behind-nginx", {
      machine: machine(),
      db: "postgres",
      behind: "nginx",
      settlement: o.settlement,
      connections: o.connections,
      duration: o.duration,
      direct,
      nginx,
      ratio: direct.acceptedPerSec > 0 ? nginx.acceptedPerSec / direct.acceptedPerSec : null,
    });
    console.log(`result: ${file}`);
  } finally {
    await shape?.stop();
    await bench.close();
  }
}

/** Resolves once the servers' deposit watcher has credited the deposit `hash`. */
async function credited(bench: Awaited<ReturnType<typeof createBenchContext>>, hash: string): Promise<void> {
  const deadline = Date.now() + CREDIT_WAIT_MS_MAX;
  while ((await bench.ctx.ledger.deposits.statusOf(hash)) !== "credited") {
    if (Date.now() > deadline) throw new Error(`deposit ${hash} was not credited within ${CREDIT_WAIT_MS_MAX / 1000} s`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
