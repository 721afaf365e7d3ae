/**
 * `--behind nginx` of the read and pay benches: a deployment's shape beside one process reached directly. A local
 * chain stands in for Base (a live server needs one); `agentwallet serve` runs as processes in live mode on the
 * benchmark's PostgreSQL schema; nginx runs the shipped deploy/nginx/agentwallet.conf (its ports and a generated
 * certificate swapped in, as the production-shape test runs it) and terminates TLS in front of two of them.
 * One process starts first, alone, reached over http (`directUrl`); `addProxy()` then starts the second and nginx,
 * so the direct figures are one process's with no other serving or settling beside it. `stop()` stops nginx, the
 * processes and the chain by their PIDs, whichever of them started; it may be called more than once.
 */
import type { ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type DevChain, startDevChain } from "@agentwallet/devchain";
import { freePort } from "../../packages/server/test/support/net.ts";
import { requireNginx, shippedNginxSite, startNginx } from "../../packages/server/test/support/nginx.ts";
import { type ServerProcess, liveEnv, spawnServer } from "../../packages/server/test/support/spawnServer.ts";
import { selfSignedCertificate, stopProcess } from "../../packages/server/test/support/tlsProxy.ts";
import { log } from "../lib.ts";
import { BENCH_MNEMONIC } from "./benchContext.ts";

/** A process's start-up on a loaded two-core machine (its settlement thread loads the service a second time). */
const SERVE_READY_MS_MAX = 120_000;
/** liveEnv's loop intervals are the tests' (100 ms): the processes keep the service's defaults unless a bench names its own. */
const TEST_INTERVALS = ["WATCHER_INTERVAL_MS", "WORKER_INTERVAL_MS", "PAYMENT_REQUEST_LEASE_MS"];

export type BehindNginx = {
  chain: DevChain;
  /** The first process, over http. */
  directUrl: string;
  /** Starts the second process and nginx in front of both; resolves to nginx's https URL (its certificate: `ca`). */
  addProxy(): Promise<string>;
  ca: Buffer;
  stop(): Promise<void>;
};

/** `env`: the bench's settings for every process (rate limit, log level, settlement), over the live ones. */
export async function startBehindNginx(o: { databaseUrl: string; env: NodeJS.ProcessEnv }): Promise<BehindNginx> {
  requireNginx();
  const dir = mkdtempSync(join(tmpdir(), "aw-bench-nginx-"));
  const servers: ServerProcess[] = [];
  let nginx: ChildProcess | undefined;
  let chain: DevChain | undefined;
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    const step = (what: string) => (err: unknown) => console.error(`stopping ${what} failed:`, err);
    await stopProcess(nginx).catch(step("nginx"));
    for (const s of servers) await s.stop().catch(step(`agentwallet serve (pid ${s.child.pid})`));
    await chain?.stop().catch(step("the local chain"));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    log("starting the local chain…");
    chain = await startDevChain();
    const { cert, key } = selfSignedCertificate(dir);
    const [proxyPort, firstPort] = await Promise.all([freePort(), freePort()]);
    const proxyUrl = `https://127.0.0.1:${proxyPort}`;
    const env: NodeJS.ProcessEnv = {
      ...liveEnv(chain, { databaseUrl: o.databaseUrl, dataDir: join(dir, "data") }),
      // The bench's own wallets: its project's deposit address was derived from this mnemonic.
      AGENTWALLET_MASTER_MNEMONIC: BENCH_MNEMONIC,
      PUBLIC_BASE_URL: proxyUrl,
      // As deploy/nginx/agentwallet.conf has each replica set it: the proxy's address is trusted, no other.
      TRUST_PROXY: "127.0.0.1",
      ...o.env,
    };
    for (const name of TEST_INTERVALS) if (o.env[name] === undefined) delete env[name];
    log(`starting agentwallet serve (live mode on the local chain) on 127.0.0.1:${firstPort}…`);
    servers.push(await spawnServer(env, firstPort, SERVE_READY_MS_MAX));
    const ca = readFileSync(cert);
    return {
      chain,
      directUrl: servers[0]!.baseUrl,
      ca,
      async addProxy() {
        const secondPort = await freePort();
        log(`starting a second agentwallet serve on 127.0.0.1:${secondPort}, and nginx on ${proxyUrl} in front of both…`);
        servers.push(await spawnServer(env, secondPort, SERVE_READY_MS_MAX));
        const site = shippedNginxSite({ listenPort: proxyPort, upstreamPorts: [firstPort, secondPort], cert, key });
        // One worker per core, as Debian's nginx.conf has it.
        nginx = await startNginx({ dir, sites: [site], listenPorts: [proxyPort], workerProcesses: "auto" });
        return proxyUrl;
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
