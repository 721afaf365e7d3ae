/**
 * `npm run bench -- x402`: a paid `POST /v1/pay` on the real sandbox server (real database, anvil, the
 * x402 rail with its SSRF-safe fetcher, on-chain proof of settlement and the fee sweep) against the same
 * merchant paid directly by Coinbase's own client (`@x402/fetch`), in one run. Both pay a real
 * `@x402/express` merchant settling through x402's own facilitator on loopback; requests alternate one at
 * a time (direct, service, direct, …) so both see the same machine. Both callers run on a thread of their
 * own (support/x402Callers.ts), as an agent is a process of its own: on the servers' thread, the service's
 * work after an answer would be timed as the caller's wait. Target: median and p99 of the
 * service ≤ 1.25 × direct. Then, in the same run, the same against a Machine Payments Protocol merchant on mppx's own
 * server (its EVM charge, settled by the merchant), paid directly by mppx's own client. `--version` measures one.
 * Also reported, without a target: `POST /v1/quote` for the same URL beside the bare unpaid request to the
 * merchant (its 402), alternating the same way: what knowing the price first costs over asking the merchant.
 */
import { parseArgs } from "node:util";
import { startFacilitator, startMerchantV1, startMerchantV2, startMppMerchant } from "@agentwallet/devchain";
import { Worker } from "node:worker_threads";
import { startTestServer } from "../packages/server/src/testing/harness.ts";
import type { CallAnswer, CallKind, CallerSetup } from "./support/x402Callers.ts";
import { createTimeline } from "./support/x402Timeline.ts";
import { type Cell, UsageError, log, machine, percentile, printTable, verdict, writeResult, benchDatabase } from "./lib.ts";

const TARGET_RATIO_MAX = 1.25;
/** What the service may add to a paid call's median, in ms. */
const TARGET_ADDED_P50_MS_MAX = 2;

/** Milliseconds with their sign: "+2.3", "-0.4". */
const signedMs = (ms: number, digits: number) => `${ms >= 0 ? "+" : ""}${ms.toFixed(digits)}`;
const PRICE_MICROS = 10_000n;
const MERCHANT_PAY_TO = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

const HELP = `npm run bench -- x402 [flags]
  --db sqlite|postgres   database of the service (default sqlite, synchronous=FULL; postgres uses $TEST_DATABASE_URL or the local server)
  --version 1|2|mpp      only this protocol of the merchant: x402 2 (@x402/express), x402 1 (x402-express), or MPP (mppx's server;
                         direct side: mppx's client); default: x402 2, then MPP, against the same server
  --samples N            paid requests per side (default 200)
  --warmup N             unmeasured paid requests per side first (default 20)
  --max-seconds S        time budget for the measured requests (default 300)
  --idempotency-key      each payment through the service carries a new idempotency_key (default: none)`;

type Side = { samples: number; p50Ms: number; p99Ms: number; meanMs: number; maxMs: number };

function summarise(timesMs: number[]): Side {
  const sorted = [...timesMs].sort((a, b) => a - b);
  return { samples: sorted.length, p50Ms: percentile(sorted, 0.5), p99Ms: percentile(sorted, 0.99), meanMs: sorted.reduce((s, t) => s + t, 0) / Math.max(1, sorted.length), maxMs: sorted.at(-1) ?? 0 };
}

/**
 * Up to `samples` timings of each side within `maxSeconds`, one request at a time, alternating which side goes
 * first so neither always follows the other's chain activity.
 */
async function alternate(samples: number, maxSeconds: number, a: [() => Promise<number>, number[]], b: [() => Promise<number>, number[]]): Promise<void> {
  const deadline = performance.now() + maxSeconds * 1000;
  for (let i = 0; i < samples && performance.now() < deadline; i++) {
    for (const [fn, times] of i % 2 === 0 ? [a, b] : [b, a]) times.push(await fn());
  }
}

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      db: { type: "string", default: "sqlite" },
      version: { type: "string" },
      samples: { type: "string", default: "200" },
      warmup: { type: "string", default: "20" },
      "max-seconds": { type: "string", default: "300" },
      "idempotency-key": { type: "boolean", default: false },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return void console.log(HELP);
  if (values.db !== "sqlite" && values.db !== "postgres") throw new UsageError("--db must be sqlite or postgres");
  if (values.version !== undefined && values.version !== "1" && values.version !== "2" && values.version !== "mpp") throw new UsageError("--version must be 1, 2 or mpp");
  const versions: Version[] = values.version === undefined ? ["2", "mpp"] : [values.version];
  const samples = Number(values.samples);
  const warmup = Number(values.warmup);
  const maxSeconds = Number(values["max-seconds"]);
  if (!(Number.isInteger(samples) && samples > 0 && Number.isInteger(warmup) && warmup >= 0 && maxSeconds > 0)) throw new UsageError("--samples, --warmup and --max-seconds must be positive integers");

  const { databaseUrl, drop: dropSchema } = await benchDatabase(values.db);

  log(`starting the sandbox server (${values.db}, real anvil chain) and x402's facilitator…`);
  const server = await startTestServer({ database: values.db, databaseUrl, env: { RATE_LIMIT_PER_MINUTE: "1000000000", LOG_LEVEL: "warn", SETTLEMENT: "thread" } });
  let facilitator: Awaited<ReturnType<typeof startFacilitator>> | undefined;
  try {
    facilitator = await startFacilitator({ rpcUrl: server.server.chain!.sandbox!.rpcUrl, privateKey: server.server.chain!.sandbox!.accounts.facilitator!.privateKey });
    const verdicts: string[] = [];
    for (const version of versions) verdicts.push(await measure({ version, db: values.db, samples, warmup, maxSeconds, keyed: values["idempotency-key"], server, facilitatorUrl: facilitator.url }));
    if (verdicts.length > 1) console.log(`\n${verdicts.join("\n")}`);
  } finally {
    await facilitator?.stop();
    await server.stop();
    await dropSchema();
  }
}

type Version = "1" | "2" | "mpp";

/**
 * One protocol's measurement against the running server: its merchant, the callers' thread paying it directly and
 * through the service, the tables and the result file. Answers its verdict line.
 */
async function measure(o: { version: Version; db: string; samples: number; warmup: number; maxSeconds: number; keyed: boolean; server: Awaited<ReturnType<typeof startTestServer>>; facilitatorUrl: string }): Promise<string> {
  const { server, samples, warmup, maxSeconds } = o;
  const mpp = o.version === "mpp";
  const chain = server.server.chain!;
  const sandbox = chain.sandbox!;
  const startMerchant = o.version === "2" ? startMerchantV2 : startMerchantV1;
  log(`${mpp ? "MPP" : `x402 v${o.version}`}: starting the merchant…`);
  const merchant = mpp
    ? await startMppMerchant({ rpcUrl: sandbox.rpcUrl, chainId: chain.client.settings.chainId, usdcAddress: chain.client.usdcAddress, payTo: MERCHANT_PAY_TO, priceMicros: PRICE_MICROS, settlerKey: sandbox.accounts.merchant!.privateKey })
    : await startMerchant({ facilitatorUrl: o.facilitatorUrl, payTo: MERCHANT_PAY_TO, usdcAddress: chain.client.usdcAddress, priceMicros: PRICE_MICROS });
  const paidUrl = `${merchant.url}/paid`;
  try {
    const total = BigInt(samples + warmup + 10);
    await server.fund(total * 2n * PRICE_MICROS);
    const payer = sandbox.accounts.payer!;
    await sandbox.mint(payer.address, total * PRICE_MICROS);
    // The callers run on a thread of their own, as an agent is a process of its own (support/x402Callers.ts).
    const setup: CallerSetup = { mpp, payerKey: payer.privateKey, chainId: chain.client.settings.chainId, usdcAddress: chain.client.usdcAddress, priceMicros: PRICE_MICROS.toString(), paidUrl, serviceUrl: server.baseUrl, token: server.token, keyed: o.keyed };
    const callers = new Worker(new URL("./support/x402Callers.mjs", import.meta.url), { workerData: setup });
    const timeline = createTimeline({ merchantPort: Number(new URL(merchant.url).port), servicePort: Number(new URL(server.baseUrl).port) });
    try {
      const statuses: Record<string, number> = {};
      // One call at a time: the thread's answer (or its failure, or its end) settles the call waiting for it.
      let waiting: { resolve(a: CallAnswer): void; reject(err: unknown): void } | undefined;
      const settle = (f: (w: NonNullable<typeof waiting>) => void) => {
        const w = waiting;
        waiting = undefined;
        if (w) f(w);
      };
      callers.on("message", (a: CallAnswer) => settle((w) => w.resolve(a)));
      callers.on("error", (err) => settle((w) => w.reject(err)));
      callers.on("exit", (code) => settle((w) => w.reject(new Error(`the callers' thread ended (exit code ${code})`))));
      const ask = async (kind: CallKind) => {
        const answer = await new Promise<CallAnswer>((resolve, reject) => {
          waiting = { resolve, reject };
          callers.postMessage(kind);
        });
        if ("error" in answer) throw new Error(answer.error);
        if (answer.status) statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        return answer;
      };
      const call = (kind: CallKind) => async (): Promise<number> => (await ask(kind)).ms;
      // The paid calls are split into steps as the servers saw them (diagnostic: support/x402Timeline.ts).
      const paid = (side: "direct" | "service") => async (): Promise<number> => (await timeline.during(side, () => ask(side))).ms;
      const direct = paid("direct");
      const viaService = paid("service");

      log(`warm-up: ${warmup} paid requests per side…`);
      for (let i = 0; i < warmup; i++) {
        await direct();
        await viaService();
      }
      for (const k of Object.keys(statuses)) delete statuses[k];
      timeline.reset();

      log(`measuring: up to ${samples} paid requests per side, alternating, within ${maxSeconds} s…`);
      const directMs: number[] = [];
      const serviceMs: number[] = [];
      const merchantBefore = await chain.client.usdcBalance(MERCHANT_PAY_TO);
      await alternate(samples, maxSeconds, [direct, directMs], [viaService, serviceMs]);
      const paidOnChain = (await chain.client.usdcBalance(MERCHANT_PAY_TO)) - merchantBefore;

      log(`measuring: up to ${samples} quotes and as many bare unpaid requests, alternating…`);
      const bareMs: number[] = [];
      const quoteMs: number[] = [];
      await alternate(samples, maxSeconds, [call("bare"), bareMs], [call("quote"), quoteMs]);
      const b = summarise(bareMs);
      const q = summarise(quoteMs);
      const d = summarise(directMs);
      const s = summarise(serviceMs);
      const p50Ratio = s.p50Ms / d.p50Ms;
      const p99Ratio = s.p99Ms / d.p99Ms;
      const addedP50Ms = s.p50Ms - d.p50Ms;
      const steps = timeline.table();

      const host = machine();
      console.log(`\nmachine: ${host.cpus} × ${host.cpuModel}, ${host.memoryGiB} GiB, Node ${host.node}; load average ${host.loadAverage1m}`);
      console.log(mpp ? `merchant: MPP (mppx's server, EVM charge) on loopback, price ${PRICE_MICROS} micro-USDC, settled by the merchant on anvil (automine)` : `merchant: x402 v${o.version} on loopback, price ${PRICE_MICROS} micro-USDC, settled by x402's facilitator on anvil (automine)`);
      const rows: Cell[][] = [
        [mpp ? "direct: mppx client → merchant" : "direct: @x402/fetch → merchant", d.samples, d.p50Ms, d.p99Ms, d.meanMs, "-"],
        [`POST /v1/pay → merchant (${o.db}${o.keyed ? ", idempotency_key" : ""})`, s.samples, s.p50Ms, s.p99Ms, s.meanMs, `${p50Ratio.toFixed(2)}× / ${p99Ratio.toFixed(2)}×`],
      ];
      printTable(["path", "samples", "p50 ms", "p99 ms", "mean ms", "vs direct (p50 / p99)"], rows);
      console.log(`\nwhere the time goes (diagnostic; the servers' view, support/x402Timeline.ts): ms per paid call, the service's minus direct${timeline.unmatched ? `; ${timeline.unmatched} calls left out` : ""}`);
      printTable(
        ["step", "direct mean", "service mean", "difference", "direct p50", "service p50"],
        steps.map((r) => [r.step, r.direct ? r.direct.mean.toFixed(2) : "", r.service.mean.toFixed(2), r.direct ? signedMs(r.service.mean - r.direct.mean, 2) : "", r.direct ? r.direct.p50.toFixed(2) : "", r.service.p50.toFixed(2)]),
      );
      console.log("\nknowing the price first (no target):");
      printTable(
        ["path", "samples", "p50 ms", "p99 ms", "mean ms", "vs bare (p50 / p99)"],
        [
          ["bare unpaid request → merchant (402)", b.samples, b.p50Ms, b.p99Ms, b.meanMs, "-"],
          [`POST /v1/quote → merchant (${o.db})`, q.samples, q.p50Ms, q.p99Ms, q.meanMs, `${(q.p50Ms / b.p50Ms).toFixed(2)}× / ${(q.p99Ms / b.p99Ms).toFixed(2)}×`],
        ],
      );
      console.log(`\nservice answers: ${Object.entries(statuses).map(([k, v]) => `${v} ${k}`).join(", ")}; merchant received ${paidOnChain} micro-USDC for ${d.samples + s.samples} measured payments`);
      console.log(`median ≤ ${TARGET_RATIO_MAX} × direct: ${verdict(p50Ratio <= TARGET_RATIO_MAX)} (${p50Ratio.toFixed(2)}); p99 ≤ ${TARGET_RATIO_MAX} × direct: ${verdict(p99Ratio <= TARGET_RATIO_MAX)} (${p99Ratio.toFixed(2)}); the service adds ≤ ${TARGET_ADDED_P50_MS_MAX} ms at p50: ${verdict(addedP50Ms <= TARGET_ADDED_P50_MS_MAX)} (${signedMs(addedP50Ms, 1)} ms)`);
      const file = writeResult(`x402-v${o.version}-${o.db}`, { machine: host, db: o.db, version: o.version, keyed: o.keyed, samples, warmup, direct: d, service: s, p50Ratio, p99Ratio, addedP50Ms, steps, bareUnpaid: b, quote: q, statuses, paidOnChainMicros: paidOnChain.toString() });
      console.log(`result: ${file}`);
      return `${mpp ? "MPP" : `x402 v${o.version}`}: median ≤ ${TARGET_RATIO_MAX} × direct: ${verdict(p50Ratio <= TARGET_RATIO_MAX)} (${p50Ratio.toFixed(2)}); p99: ${verdict(p99Ratio <= TARGET_RATIO_MAX)} (${p99Ratio.toFixed(2)}); adds ≤ ${TARGET_ADDED_P50_MS_MAX} ms: ${verdict(addedP50Ms <= TARGET_ADDED_P50_MS_MAX)} (${signedMs(addedP50Ms, 1)} ms)`;
    } finally {
      timeline.close();
      await callers.terminate();
    }
  } finally {
    await merchant.stop();
  }
}
