/**
 * The pay bench's load, for its in-process run and `--behind nginx`: POSTs under autocannon (in a worker thread
 * of its own), and the payments accepted under it followed in the ledger's database until every one completed.
 */
import { readFileSync, readdirSync } from "node:fs";
import autocannon from "autocannon";
import { dbOf } from "../../packages/server/src/ledger/connection.ts";
import type { Ledger } from "../../packages/server/src/ledger/store.ts";
import { SETTLEMENT_NICE } from "../../packages/server/src/settlement/settlement.ts";
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

/**
 * In µs, so far or (in a PayRun) per accepted payment of a load: the request thread's time on a core and waiting
 * runnable for one, the local chain's (anvil, which executes the settlement's transactions) time on the cores, and
 * the local PostgreSQL server's (every `postgres` process on the machine: the bench's backends, and its writers).
 */
export type ThreadTime = {
  cpuUs: number;
  waitUs: number;
  chainUs: number | undefined;
  /** undefined: a SQLite run, or no PostgreSQL process on this machine (a server elsewhere). */
  databaseUs: number | undefined;
  /** Settlement's time on a core (the threads at nice 10: the settlement thread and the signing thread it starts, settlementThread.mjs), and every other thread's but the request thread's that lives through the load (the collector's helpers, libuv's: not the load generator's, whose thread ends with its load and is not counted). */
  settlementUs: number;
  otherUs: number;
};

export type PayRun = { pay: Load; startedAt: number; acceptedAt: number; settledAt: number; open: number; thread: ThreadTime | undefined };

/**
 * The process's main thread's time on a core and waiting for one, in µs so far (Linux's schedstat), with the chain's;
 * undefined where the file is missing. In the in-process bench that thread is the server's request thread, so its
 * time per payment is what a payment costs there, apart from what else ran on the cores meanwhile; a rate counts both
 * (behind nginx the servers are other processes, and it is not shown).
 */
function mainThreadTimes(database: "sqlite" | "postgres" | undefined): ThreadTime | undefined {
  try {
    const [cpuNs, waitNs] = readFileSync(`/proc/${process.pid}/task/${process.pid}/schedstat`, "utf8").trim().split(/\s+/).map(Number);
    return { cpuUs: cpuNs! / 1000, waitUs: waitNs! / 1000, chainUs: processTime("anvil", process.pid), databaseUs: database === "postgres" ? processTime("postgres") : undefined, ...otherThreadTimes() };
  } catch {
    return undefined;
  }
}

/** The CPU time so far, in µs, of the process's threads other than the request thread: settlement's (those at nice 10), and the others'. */
function otherThreadTimes(): { settlementUs: number; otherUs: number } {
  let settlementUs = 0;
  let otherUs = 0;
  for (const tid of readdirSync(`/proc/${process.pid}/task`)) {
    if (tid === String(process.pid)) continue;
    try {
      const stat = readFileSync(`/proc/${process.pid}/task/${tid}/stat`, "utf8");
      const us = Number(readFileSync(`/proc/${process.pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]) / 1000;
      // Field 19 of stat is the nice value (the fields after the command's closing parenthesis start at field 3).
      const nice = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
      if (nice === SETTLEMENT_NICE) settlementUs += us;
      else otherUs += us;
    } catch {
      // the thread ended meanwhile
    }
  }
  return { settlementUs, otherUs };
}

/**
 * The CPU time so far, in µs, of the processes named `comm` (children of `parent` only, when given), from their
 * `stat`, with the time of their children that ended (a PostgreSQL backend that exits is its server's child, and its
 * time moves there: without it, a backend that ended during a load took its whole life's time out of the load's);
 * undefined without one.
 */
function processTime(comm: string, parent?: number): number | undefined {
  let us: number | undefined;
  for (const entry of readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, "utf8");
    } catch {
      continue; // gone meanwhile
    }
    // pid (comm) state ppid … utime stime cutime cstime: fields 14 to 17, in clock ticks (USER_HZ, 100 on Linux).
    const close = stat.lastIndexOf(")");
    const fields = stat.slice(close + 2).split(" ");
    if (stat.slice(stat.indexOf("(") + 1, close) !== comm || (parent !== undefined && Number(fields[1]) !== parent)) continue;
    us = (us ?? 0) + (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) * 10_000;
  }
  return us;
}

/** The load on `baseUrl`'s POST /v1/pay with `tokens`, then the wait until every accepted payment completed. */
export async function payAndSettle(o: { baseUrl: string; tokens: string[]; connections: number; duration: number; settleTimeoutS: number; ledger: Ledger; database?: "sqlite" | "postgres" }): Promise<PayRun> {
  const startedAt = Date.now();
  const { tokens } = o;
  const before = mainThreadTimes(o.database);
  const pay = await post(`${o.baseUrl}/v1/pay`, { authorization: `Bearer ${tokens[0]}` }, PAY_BODY, o.connections, o.duration, 201, tokens.length > 1 ? tokens : []);
  const after = mainThreadTimes(o.database);
  const thread =
    before && after && pay.ok > 0
      ? {
          cpuUs: (after.cpuUs - before.cpuUs) / pay.ok,
          waitUs: (after.waitUs - before.waitUs) / pay.ok,
          chainUs: before.chainUs === undefined || after.chainUs === undefined ? undefined : (after.chainUs - before.chainUs) / pay.ok,
          databaseUs: before.databaseUs === undefined || after.databaseUs === undefined ? undefined : (after.databaseUs - before.databaseUs) / pay.ok,
          settlementUs: (after.settlementUs - before.settlementUs) / pay.ok,
          otherUs: (after.otherUs - before.otherUs) / pay.ok,
        }
      : undefined;
  const acceptedAt = Date.now();
  log(`waiting for ${pay.ok} accepted payments to complete on-chain…`);
  let open = Number.POSITIVE_INFINITY;
  while (open > 0 && Date.now() - acceptedAt < o.settleTimeoutS * 1000) {
    open = await o.ledger.payments.openPaymentCount();
    if (open > 0) await new Promise((r) => setTimeout(r, 250));
  }
  return { pay, startedAt, acceptedAt, settledAt: Date.now(), open, thread };
}

/** Payments completed so far, on the whole database. */
export async function completedPayments(ledger: object): Promise<number> {
  return Number((await dbOf(ledger).selectFrom("payments").select((eb) => eb.fn.countAll<number>().as("n")).where("status", "=", "completed").executeTakeFirstOrThrow()).n);
}
