/**
 * The world of one fault scenario, all real and all on loopback: anvil with a state file (so a kill -9
 * loses what a crashed node loses: up to a second), the RPC proxy in front of it, the x402 facilitator
 * and two merchants (v1 and v2) talking to the chain through the proxy, the service as a child process
 * in sandbox mode pointed at the proxy (SANDBOX_CHAIN_RPC_URL), on a SQLite file or a PostgreSQL schema
 * of its own. The test process reads the same database to create projects and to judge the outcome.
 */
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { type Anvil, connectDevChain, type DevChain, type Facilitator, type Merchant, startAnvil, startFacilitator, startMerchantV1, startMerchantV2 } from "@agentwallet/devchain";
import { type Address, type Hex, createTestClient, getAddress, http, parseAbiItem } from "viem";
import { createChainClient, type ChainClient } from "../../../src/chain/chainClient.ts";
import { type OpenedDb, openDb } from "../../../src/ledger/db.ts";
import type { Ledger } from "../../../src/ledger/store.ts";
import { newId, systemClock } from "../../../src/ids.ts";
import { createToken } from "../../../src/services/tokens.ts";
import { createPgSchema, ledgerOn, type TestDialect } from "../../support/db.ts";
import { freePort, spawnServer, type ServerProcess } from "../../support/spawnServer.ts";
import { startAwakeClock } from "./awakeClock.ts";
import { createRng, type Rng } from "./rng.ts";
import { startRpcProxy, type RpcProxy } from "./rpcProxy.ts";

export const PAYMENT_CONFIRMATIONS = 1;
/** A valid ABA routing number (checksum included). */
export const ROUTING = "021000021";
/** Any account but the sandbox off-ramp's test numbers (1111000000 fails, 2222000000 returns, 3333000000 is refused). */
export const FIAT_OK_ACCOUNT = "000123456789";
export const FIAT_FAIL_ACCOUNT = "1111000000";
export const FIAT_RETURN_ACCOUNT = "2222000000";
export const X402_PRICE_MICROS = 7_000n;
/** A server start on two cores shared with the rest of the suite can take tens of seconds. */
const SERVER_READY_MS = 240_000;
/** Above the 6 s that x402's facilitator wants left on an authorization it settles, with room for faults. */
const MERCHANT_VALIDITY_SECONDS = 20;

export type Project = { id: string; token: string; wallet: Address };

export type FaultChain = {
  /** anvil's own URL (changes at each restart); the service never sees it, only the proxy's. */
  directUrl(): string;
  up(): boolean;
  kill9(): Promise<void>;
  restart(): Promise<void>;
  snapshot(): Promise<Hex>;
  revert(id: Hex): Promise<boolean>;
  mine(blocks: number): Promise<void>;
  mint(to: Address, micros: bigint): Promise<Hex>;
  balanceOf(a: Address): Promise<bigint>;
  nonces(a: Address): Promise<{ latest: number; pending: number }>;
  /** A mined transaction's status, or undefined when the chain does not have it. */
  receipt(hash: Hex): Promise<"success" | "reverted" | undefined>;
  /** Every USDC transfer from or to an address, in chain order (for a failure's report). */
  transfersOf(a: Address): Promise<{ block: bigint; tx: Hex; from: Address; to: Address; value: bigint }[]>;
  usdc: Address;
  dev(): DevChain;
};

export type FaultWorld = {
  dialect: TestDialect;
  rng: Rng;
  dir: string;
  proxy: RpcProxy;
  chain: FaultChain;
  facilitator: Facilitator;
  merchants: { v1: Merchant & { payTo: Address }; v2: Merchant & { payTo: Address } };
  offramp: Address;
  relayer: Address;
  ledger: Ledger;
  env: NodeJS.ProcessEnv;
  server(): ServerProcess;
  baseUrl: string;
  serverUp(): boolean;
  killServer(): Promise<void>;
  restartServer(): Promise<void>;
  killChain(): Promise<void>;
  restartChain(): Promise<void>;
  newProject(name: string, fundMicros: bigint): Promise<Project>;
  log(line: string): void;
  /**
   * A wait of `ms` that counts only the time this process ran: a stall of it does not use the wait up.
   * The service stalls with it (its RPC proxy runs here), as with a stall of the whole machine. Answers
   * whether the wait is over.
   */
  within(ms: number): () => boolean;
  events(): string[];
  stop(): Promise<void>;
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether a file holds whole JSON (anvil's state file, which a kill can leave half-written). */
function parses(path: string): boolean {
  try {
    JSON.parse(readFileSync(path, "utf8"));
    return true;
  } catch {
    return false;
  }
}

async function startChain(dir: string): Promise<FaultChain> {
  const statePath = join(dir, "chain-state.json");
  let anvil: Anvil | undefined;
  let dev: DevChain;
  let client: ChainClient;
  let keep: NodeJS.Timeout | undefined;
  const open = async () => {
    // The sandbox's own chain settings: a block per transaction plus an empty block a second.
    anvil = await startAnvil({ statePath, blockTime: 1, mixedMining: true });
    // Kept while it runs: a copy of its last whole state file, for a restart after a kill mid-write (restart).
    keep ??= setInterval(() => {
      if (anvil && existsSync(statePath) && parses(statePath)) copyFileSync(statePath, `${statePath}.whole`);
    }, 1_000);
    keep.unref();
    dev = await connectDevChain({ rpcUrl: anvil.rpcUrl });
    client = createChainClient({ rpcUrl: anvil.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1, pollingIntervalMs: 50 });
  };
  await open();
  const test = () => createTestClient({ mode: "anvil", transport: http(anvil!.rpcUrl) });
  return {
    directUrl: () => anvil!.rpcUrl,
    up: () => anvil !== undefined,
    async kill9() {
      const a = anvil!;
      anvil = undefined;
      clearInterval(keep);
      keep = undefined;
      process.kill(a.pid, "SIGKILL");
      await a.stop(); // reaps it (and its watchdog); returns at once for a process that has exited
    },
    async restart() {
      // anvil rewrites its state file every second in place: killed mid-write, it leaves a file it cannot read
      // (seen: empty). A node's disk holds its last whole state then, so this one starts from its last whole file.
      if (existsSync(statePath) && !parses(statePath) && existsSync(`${statePath}.whole`)) copyFileSync(`${statePath}.whole`, statePath);
      await open();
    },
    snapshot: () => test().snapshot(),
    revert: (id) => test().request({ method: "evm_revert", params: [id] }) as Promise<boolean>,
    mine: (blocks) => test().mine({ blocks }),
    mint: (to, micros) => dev.mint(to, micros),
    balanceOf: (a) => client.usdcBalance(a),
    async nonces(a) {
      const latest = await client.client.getTransactionCount({ address: a, blockTag: "latest" });
      const pending = await client.client.getTransactionCount({ address: a, blockTag: "pending" });
      return { latest, pending };
    },
    async receipt(hash) {
      const r = await client.client.getTransactionReceipt({ hash }).catch(() => undefined);
      return r?.status;
    },
    async transfersOf(a) {
      const event = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
      const read = (args: { from: Address } | { to: Address }) => client.client.getLogs({ address: dev.usdcAddress, event, args, fromBlock: 0n });
      const logs = [...(await read({ from: a })), ...(await read({ to: a }))];
      logs.sort((x, y) => Number(x.blockNumber! - y.blockNumber!) || x.logIndex! - y.logIndex!);
      return logs.map((l) => ({ block: l.blockNumber!, tx: l.transactionHash!, from: l.args.from!, to: l.args.to!, value: l.args.value! }));
    },
    get usdc() {
      return dev.usdcAddress;
    },
    dev: () => dev,
  };
}

export async function startFaultWorld(dialect: TestDialect, seed: number, scenario: string): Promise<FaultWorld> {
  const rng = createRng(seed).fork(scenario);
  const dir = mkdtempSync(join(tmpdir(), `aw-fault-${scenario}-`));
  const events: string[] = [];
  const t0 = Date.now();
  const log = (line: string) => {
    events.push(`+${((Date.now() - t0) / 1000).toFixed(1)}s ${line}`);
    if (process.env.FAULT_VERBOSE) console.log(`[${scenario}/${dialect}] ${events[events.length - 1]}`);
  };
  const chain = await startChain(dir);
  // Slow or failed chain calls, and the test process's own stalls, go into the events a failure prints.
  let slowLines = 0;
  const proxy = await startRpcProxy(rng.fork("proxy"), chain.directUrl(), { onSlow: (line) => void (++slowLines <= 40 && log(line)) });
  const stalls = monitorEventLoopDelay({ resolution: 20 });
  stalls.enable();
  const stallWatch = setInterval(() => {
    if (stalls.max > 1e9) log(`test process event loop stalled up to ${(stalls.max / 1e6).toFixed(0)} ms`);
    stalls.reset();
  }, 5_000);
  stallWatch.unref();
  const awake = startAwakeClock();
  const within = awake.within;
  const accounts = chain.dev().accounts;
  const facilitator = await startFacilitator({ rpcUrl: proxy.url, privateKey: accounts.facilitator.privateKey });
  const payTo = (n: number) => getAddress(`0x${"fa".repeat(19)}${n.toString(16).padStart(2, "0")}`);
  // Authorizations valid 20 s (60 by default): a settlement the chain lost is paid again once its
  // authorization expired unused, within the scenario's wait.
  const merchant = { facilitatorUrl: facilitator.url, usdcAddress: chain.usdc, maxTimeoutSeconds: MERCHANT_VALIDITY_SECONDS };
  const v1 = await startMerchantV1({ ...merchant, payTo: payTo(1), priceMicros: X402_PRICE_MICROS });
  const v2 = await startMerchantV2({ ...merchant, payTo: payTo(2), priceMicros: X402_PRICE_MICROS + 1n });
  const pg = dialect === "postgres" ? await createPgSchema() : undefined;
  const env: NodeJS.ProcessEnv = {
    SANDBOX_CHAIN_RPC_URL: proxy.url,
    BASE_RPC_URL: "",
    AGENTWALLET_DATA_DIR: dir,
    DATABASE_URL: pg?.url ?? "",
    DEPOSIT_CONFIRMATIONS: "1",
    PAYMENT_CONFIRMATIONS: String(PAYMENT_CONFIRMATIONS),
    RATE_LIMIT_PER_MINUTE: "1000000",
    WATCHER_INTERVAL_MS: "100",
    WORKER_INTERVAL_MS: "100",
    // An x402 request needs a lease longer than two x402 round trips and a margin (x402Rail.ts): 2 × 3 s
    // + 5 s, plus the first fetch. A killed request waits out its lease before the worker resumes it.
    PAYMENT_REQUEST_LEASE_MS: "14000",
    FIAT_SANDBOX_DELAY_MS: "300",
    RPC_TIMEOUT_MS: "3000",
    // Steps that failed on a broken RPC are retried with a doubling delay; capped low so a scenario's
    // recovery after the faults stop takes seconds, not the production minute.
    SETTLEMENT_BACKOFF_MAX_MS: "4000",
    LOST_SETTLEMENT_CHECK_MS: "1000",
    RPC_RETRIES: "1",
    X402_ALLOW_HTTP: "1",
    X402_ALLOW_PRIVATE_NETWORKS: "1",
    X402_TIMEOUT_MS: "3000",
    LOG_LEVEL: "warn",
  };
  // A free port can be bound by another test file's process before the server binds it (the server then
  // exits with EADDRINUSE): the first start takes another port, bounded. Restarts keep the one it got.
  const firstStart = async (): Promise<{ server: ServerProcess; port: number }> => {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      try {
        return { server: await spawnServer(env, port, SERVER_READY_MS), port };
      } catch (err) {
        if (attempt >= 3 || !String(err).includes("EADDRINUSE")) throw err;
      }
    }
  };
  const started = await firstStart();
  const port = started.port;
  let server = started.server;
  log("server started");
  let serverUp = true;
  const opened: OpenedDb = pg ? openDb({ kind: "postgres", url: pg.url }) : openDb({ kind: "sqlite", path: join(dir, "agentwallet.db") });
  const ledger = ledgerOn(opened);
  const world: FaultWorld = {
    dialect,
    rng,
    dir,
    proxy,
    chain,
    facilitator,
    merchants: { v1: { ...v1, payTo: payTo(1) }, v2: { ...v2, payTo: payTo(2) } },
    offramp: accounts.offramp.address,
    relayer: accounts.relayer.address,
    ledger,
    env,
    server: () => server,
    baseUrl: server.baseUrl,
    serverUp: () => serverUp,
    async killServer() {
      serverUp = false;
      await server.kill9();
      log("kill -9 server");
    },
    async restartServer() {
      // The port can be taken for a moment after a kill; the start-up is retried, bounded.
      for (let attempt = 1; ; attempt++) {
        try {
          server = await spawnServer(env, port, SERVER_READY_MS);
          break;
        } catch (err) {
          if (attempt >= 3) throw err;
          await sleep(500);
        }
      }
      serverUp = true;
      log("server restarted");
    },
    async killChain() {
      proxy.setUpstream(undefined);
      await chain.kill9();
      log("kill -9 chain");
    },
    async restartChain() {
      await chain.restart();
      proxy.setUpstream(chain.directUrl());
      log("chain restarted from its state file");
    },
    async newProject(name, fundMicros) {
      const project = await ledger.projects.create({ name, plan: "free" });
      const token = (await createToken({ ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read", "pay", "x402"], mode: "test" })).token;
      const api = async (path: string) => {
        for (let i = 0; ; i++) {
          try {
            const res = await fetch(`${world.baseUrl}${path}`, { headers: { authorization: `Bearer ${token}` }, signal: AbortSignal.timeout(10_000) });
            if (res.ok) return (await res.json()) as Record<string, unknown>;
            if (i > 100) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
          } catch (err) {
            if (i > 100) throw err;
          }
          await sleep(200);
        }
      };
      const wallet = getAddress((await api("/v1/stablecoin/address")).address as string);
      if (fundMicros > 0n) {
        await chain.mint(wallet, fundMicros);
        const over = within(60_000);
        for (;;) {
          const b = await ledger.balances.get(project.id);
          if (b && BigInt(b.available_micros) >= fundMicros) break;
          if (over()) throw new Error(`deposit of ${fundMicros} to project ${project.id} (${wallet}) not credited within 60 s`);
          await sleep(100);
        }
      }
      log(`project ${project.id} funded with ${fundMicros}`);
      return { id: project.id, token, wallet };
    },
    log,
    within,
    events: () => [...events],
    async stop() {
      clearInterval(stallWatch);
      awake.stop();
      stalls.disable();
      await server.stop().catch(() => {});
      await Promise.all([v1.stop(), v2.stop()]).catch(() => {});
      await facilitator.stop().catch(() => {});
      await proxy.stop();
      if (chain.up()) await chain.kill9().catch(() => {});
      await opened.close();
      await pg?.drop().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return world;
}
