/**
 * The pay bench's load, for its in-process run and `--behind nginx`: POSTs under autocannon (in a worker thread
 * of its own), and the payments accepted under it followed in the ledger's database until every one completed.
 */
import autocannon from "autocannon";
import { dbOf } from "../../packages/server/src/ledger/connection.ts";
import { log } from "../lib.ts";

const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
/** 0.01 USDC per payment + 0.0002 fee. */
const AMOUNT_USD = 0.01;
/** One POST /v1/pay body: a USDC transfer of AMOUNT_USD to RECIPIENT. */
export const PAY_BODY = JSON.stringify({ recipient: RECIPIENT, amount_usd: AMOUNT_USD });
export { RECIPIENT };

// autocannon's own options and events beyond bench/autocannon.d.ts's GET-only declaration.
type Result = { requests: { average: number; total: number }; latency: { p50: number; p99: number }; non2xx: number; errors: number; statusCodeStats?: Record<string, { count: number }> };
const load = autocannon as unknown as (options: Record<string, unknown>) => Promise<Result>;

export type Load = { reqPerSec: number; p50Ms: number; p99Ms: number; total: number; ok: number; non2xx: number; errors: number };

/** `tokens`: each connection's requests go through these in turn (autocannon's request list). */
export async function post(url: string, headers: Record<string, string>, body: string, connections: number, duration: number, okStatus: number, tokens: string[] = []): Promise<Load> {
  // A worker thread generates the load, so it never shares the event loop of the server it measures.
  const requests = tokens.length ? { requests: tokens.map((t) => ({ method: "POST", headers: { "content-type": "application/json", authorization: `Bearer ${t}` }, body })) } : {};
  const r = await load({ url, method: "POST", headers: { "content-type": "application/json", ...headers }, body, connections, duration, workers: 1, timeout: 30, ...requests });
  const ok = r.statusCodeStats?.[String(okStatus)]?.count ?? 0;
  return { reqPerSec: r.requests.average, p50Ms: r.latency.p50, p99Ms: r.latency.p99, total: r.requests.total, ok, non2xx: r.non2xx, errors: r.errors };
}

export type PayRun = { pay: Load; startedAt: number; acceptedAt: number; settledAt: number; open: number };

/** The load on `baseUrl`'s POST /v1/pay with `tokens`, then the wait until every accepted payment completed. */
export async function payAndSettle(o: { baseUrl: string; tokens: string[]; connections: number; duration: number; settleTimeoutS: number; ledger: object }): Promise<PayRun> {
  const startedAt = Date.now();
  const { tokens } = o;
  const pay = await post(`${o.baseUrl}/v1/pay`, { authorization: `Bearer ${tokens[0]}` }, PAY_BODY, o.connections, o.duration, 201, tokens.length > 1 ? tokens : []);
  const acceptedAt = Date.now();
  log(`waiting for ${pay.ok} accepted payments to complete on-chain…`);
  let open = Number.POSITIVE_INFINITY;
  while (open > 0 && Date.now() - acceptedAt < o.settleTimeoutS * 1000) {
    const r = await dbOf(o.ledger).selectFrom("payments").select((eb) => eb.fn.countAll<number>().as("n")).where("status", "in", ["pending", "processing"]).executeTakeFirstOrThrow();
    open = Number(r.n);
    if (open > 0) await new Promise((r) => setTimeout(r, 250));
  }
  return { pay, startedAt, acceptedAt, settledAt: Date.now(), open };
}

/** Payments completed so far, on the whole database. */
export async function completedPayments(ledger: object): Promise<number> {
  return Number((await dbOf(ledger).selectFrom("payments").select((eb) => eb.fn.countAll<number>().as("n")).where("status", "=", "completed").executeTakeFirstOrThrow()).n);
}
