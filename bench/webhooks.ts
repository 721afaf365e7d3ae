/**
 * `npm run bench -- webhooks`: webhook delivery on the real sandbox server (its delivery worker, its
 * database triggers, the SSRF-safe fetcher, Standard Webhooks signing) to a local receiver that answers
 * 204 at once. Two runs, each of `deposit.pending` events written by the trigger as the ledger records
 * seen deposits: a burst (N events written in one transaction; delivered per second from its start to
 * the last arrival) and a paced stream (R events a second; the delay from each state change to its
 * arrival at the receiver, p50/p99). The receiver runs in the bench's process, beside the server.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { parseArgs } from "node:util";
import { loadWebhookSecretKey } from "../packages/server/src/masterKeys.ts";
import { newId, systemClock } from "../packages/server/src/ids.ts";
import { createWebhookEndpoint } from "../packages/server/src/services/webhooks/endpoints.ts";
import { startTestServer } from "../packages/server/src/testing/harness.ts";
import { UsageError, benchDatabase, log, machine, percentile, printTable, writeResult } from "./lib.ts";
import { dbOf } from "../packages/server/src/ledger/connection.ts";

const HELP = `npm run bench -- webhooks [flags]
  --db sqlite|postgres   database (default sqlite; postgres uses $TEST_DATABASE_URL or the local server)
  --events N             events of the burst (default 2000)
  --rate R               events a second of the paced stream (default 50)
  --duration S           seconds of the paced stream (default 10)`;

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { db: { type: "string", default: "sqlite" }, events: { type: "string", default: "2000" }, rate: { type: "string", default: "50" }, duration: { type: "string", default: "10" }, help: { type: "boolean", default: false } } });
  if (values.help) return void console.log(HELP);
  if (values.db !== "sqlite" && values.db !== "postgres") throw new UsageError("--db must be sqlite or postgres");
  const [burstN, rate, duration] = [Number(values.events), Number(values.rate), Number(values.duration)];
  if (!(burstN > 0 && rate > 0 && duration > 0)) throw new UsageError("--events, --rate and --duration must be positive numbers");

  const arrivals = new Map<string, number>();
  const receiver = createServer((req, res) => {
    req.resume().on("end", () => {
      arrivals.set(String(req.headers["webhook-id"]), Date.now());
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", r));
  const { databaseUrl, drop } = await benchDatabase(values.db);
  log(`starting the sandbox server (${values.db}, real anvil chain)…`);
  const server = await startTestServer({ database: values.db, databaseUrl, env: { LOG_LEVEL: "warn", SETTLEMENT: "thread" } });
  const ctx = server.server.ctx;
  try {
    await createWebhookEndpoint(
      { ledger: ctx.ledger, clock: systemClock, newId, mode: "sandbox", secretKey: () => loadWebhookSecretKey(ctx.config) },
      { projectId: server.projectId, url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks` },
    );
    let n = 0;
    const seen = () => ctx.ledger.deposits.recordSeen({ chain: "bench", txHash: `0x${(n++).toString(16).padStart(64, "0")}`, logIndex: 0, projectId: server.projectId, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1, blockNumber: 1, blockHash: "0x0" });
    const events = async (from: number) =>
      (await dbOf(ctx.ledger).selectFrom("webhook_outbox").select(["id", "occurred_at"]).where("project_id", "=", server.projectId).orderBy("seq").execute()).slice(from);
    const delivered = async (count: number) => {
      const deadline = Date.now() + 300_000;
      while (arrivals.size < count) {
        if (Date.now() > deadline) throw new Error(`only ${arrivals.size} of ${count} events arrived within 300 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };

    log(`burst: ${burstN} events…`);
    // Written in one transaction (the trigger writes each row's event), so the figure is the delivery's alone.
    const burstStart = Date.now();
    await dbOf(ctx.ledger).transaction().execute(async (trx) => {
      for (let i = 0; i < burstN; i += 500) {
        const rows = Array.from({ length: Math.min(500, burstN - i) }, () => ({ chain: "bench", tx_hash: `0x${(n++).toString(16).padStart(64, "0")}`, log_index: 0, project_id: server.projectId, to_address: "0x0", from_address: "0x1", amount_micros: 1, block_number: 1, block_hash: "0x0", status: "seen" as const, txn_id: newId("txn"), seen_at: new Date().toISOString(), credited_at: null }));
        await trx.insertInto("deposits").values(rows).execute();
      }
    });
    const writtenMs = Date.now() - burstStart;
    await delivered(burstN);
    const burst = await events(0);
    const lastArrival = Math.max(...burst.map((e) => arrivals.get(e.id)!));
    const burstPerSec = burstN / ((lastArrival - burstStart) / 1000);

    log(`paced: ${rate} events/s for ${duration} s…`);
    const paced = Math.round(rate * duration);
    const t0 = Date.now();
    for (let i = 0; i < paced; i++) {
      const due = t0 + (i * 1000) / rate;
      if (due > Date.now()) await new Promise((r) => setTimeout(r, due - Date.now()));
      await seen();
    }
    await delivered(burstN + paced);
    const delays = (await events(burstN)).map((e) => arrivals.get(e.id)! - Date.parse(e.occurred_at)).sort((a, b) => a - b);

    const m = machine();
    console.log(`\nmachine: ${JSON.stringify(m)}`);
    printTable(
      ["run", "events", "delivered/s", "delay p50 ms", "delay p99 ms", "note"],
      [
        ["burst", burstN, Math.round(burstPerSec), "-", "-", `one transaction of ${writtenMs} ms → last arrival`],
        ["paced", paced, rate, percentile(delays, 0.5), percentile(delays, 0.99), `state change → arrival, WEBHOOK_INTERVAL_MS ${ctx.config.webhookDelivery.intervalMs}`],
      ],
    );
    const file = writeResult(`webhooks-${values.db}`, { machine: m, db: values.db, burstN, burstPerSec, writtenMs, paced, rate, delayP50Ms: percentile(delays, 0.5), delayP99Ms: percentile(delays, 0.99), maxInFlight: ctx.config.webhookDelivery.maxInFlight });
    log(`result: ${file}`);
  } finally {
    await server.stop();
    await drop();
    receiver.close();
  }
}
