// Starts and stops an anvil process (the binary shipped in the @foundry-rs/anvil npm package), so the
// sandbox and tests get a real EVM on loopback without any setup.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:net";
import { createRequire } from "node:module";

export type StartAnvilOptions = {
  /** Loopback port to listen on; a free one is picked when omitted. */
  port?: number;
  /** Chain id; 8453 (Base) by default, because x402 maps the network names to it. */
  chainId?: number;
  /** Load the chain from this file if it exists and keep writing it, so a restart keeps the chain. */
  statePath?: string;
  /** Seconds per block; omitted = automine (a block per transaction, the fast default for tests). */
  blockTime?: number;
  /**
   * With blockTime: also mine a block for every transaction at once (anvil --mixed-mining), so
   * transactions confirm instantly and empty blocks keep coming, as confirmations count on them.
   */
  mixedMining?: boolean;
};

export type Anvil = {
  rpcUrl: string;
  port: number;
  pid: number;
  /** Stops the process (SIGTERM, then SIGKILL) and resolves once it has exited. Idempotent. */
  stop(): Promise<void>;
};

/** How long anvil may take to answer eth_chainId (it usually takes 70–230 ms). */
export const ANVIL_READY_TIMEOUT_MS = 10_000;
const READY_POLL_INTERVAL_MS = 25;
const READY_PROBE_TIMEOUT_MS = 1_000;
/** A SIGTERM lets anvil write its state file; this long is plenty before it is killed outright. */
export const ANVIL_STOP_GRACE_MS = 5_000;
const KILL_WAIT_MS = 2_000;
/** Blocks whose state anvil keeps (see startOnPort). */
const STATE_HISTORY_BLOCKS = 64;
/** Seconds between state dumps when statePath is set, bounding what a crash (SIGKILL) loses. */
const STATE_DUMP_INTERVAL_SECONDS = 1;
/** A free port picked by the OS can be taken before anvil binds it; try again this many times. */
const PORT_ATTEMPTS_MAX = 3;
/** Keep only the tail of anvil's stderr, for error messages. */
const STDERR_TAIL_BYTES = 8_192;

const require = createRequire(import.meta.url);

export class AnvilStartError extends Error {
  override name = "AnvilStartError";
}

/** Absolute path of the anvil binary from the installed platform package. */
export function anvilBinaryPath(): string {
  return require.resolve("@foundry-rs/anvil-linux-amd64/bin/anvil");
}

export async function startAnvil(options: StartAnvilOptions = {}): Promise<Anvil> {
  const attempts = options.port === undefined ? PORT_ATTEMPTS_MAX : 1;
  let lastError: unknown;
  for (let attempt = 1; attempt <= attempts; attempt++) {
    const port = options.port ?? (await findFreePort());
    try {
      return await startOnPort(port, options);
    } catch (error) {
      lastError = error;
      // Only a port picked here can be swapped for another; a port the caller chose is their error.
      if (!(error instanceof PortInUseError) || options.port !== undefined) throw error;
    }
  }
  throw new AnvilStartError(`anvil could not bind a free port after ${attempts} attempts`, { cause: lastError });
}

class PortInUseError extends AnvilStartError {}

async function startOnPort(port: number, options: StartAnvilOptions): Promise<Anvil> {
  // Checked up front because the readiness probe cannot tell our anvil from another node already on
  // the port: it would answer, and this would return a handle to a process that has just exited.
  if (!(await isPortFree(port))) {
    throw new PortInUseError(`port ${port} on 127.0.0.1 is already in use; pick another or omit port to get a free one`);
  }
  const chainId = options.chainId ?? 8453;
  // --prune-history 64: the latest 64 blocks' states in memory, none on disk. By default anvil writes
  // older states to files under ~/.foundry/anvil/tmp that outlive it: 3 GB after one 10-second burst
  // of relayed payments, 37 GB after a morning of benchmarks. With no history at all (the flag without
  // a number) anvil's memory also stayed small, but an eth_call at "latest" then failed now and then
  // while a block was mined (x402's facilitator simulation did). A dev chain is never asked for
  // an older block's state; receipts and logs are kept either way.
  const args = ["--host", "127.0.0.1", "--port", String(port), "--chain-id", String(chainId), "--silent", "--prune-history", String(STATE_HISTORY_BLOCKS)];
  if (options.statePath !== undefined) {
    args.push("--state", options.statePath, "--state-interval", String(STATE_DUMP_INTERVAL_SECONDS));
  }
  if (options.blockTime !== undefined) args.push("--block-time", String(options.blockTime));
  if (options.mixedMining) {
    if (options.blockTime === undefined) throw new Error("mixedMining needs a blockTime");
    args.push("--mixed-mining");
  }

  const child = spawn(anvilBinaryPath(), args, { stdio: ["ignore", "ignore", "pipe"] });
  let stderrTail = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (chunk: string) => {
    stderrTail = (stderrTail + chunk).slice(-STDERR_TAIL_BYTES);
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  // spawn reports a missing or non-executable binary as an 'error' event, not a throw.
  const spawnFailed = new Promise<Error>((resolve) => child.once("error", resolve));

  const watchdog = startWatchdog(child.pid);
  child.once("exit", () => watchdog?.kill("SIGKILL"));

  const rpcUrl = `http://127.0.0.1:${port}`;
  const stop = once(async () => {
    watchdog?.kill("SIGKILL");
    await terminate(child, exited);
  });

  const polling = new AbortController();
  let outcome: "ready" | "exited" | Error;
  try {
    outcome = await Promise.race([
      waitUntilReady(rpcUrl, chainId, polling.signal).then(() => "ready" as const),
      exited.then(() => "exited" as const),
      spawnFailed,
    ]);
  } catch (error) {
    await stop();
    const message = error instanceof Error ? error.message : String(error);
    throw new AnvilStartError(`${message}. stderr: ${stderrTail.trim() || "(empty)"}`, { cause: error });
  } finally {
    polling.abort();
  }
  if (outcome === "ready" && child.exitCode === null && child.signalCode === null) {
    return { rpcUrl, port, pid: child.pid!, stop };
  }

  await stop();
  if (outcome instanceof Error) {
    throw new AnvilStartError(`could not run anvil (${anvilBinaryPath()}): ${outcome.message}`, { cause: outcome });
  }
  const detail = `anvil exited with code ${child.exitCode} before answering on ${rpcUrl}. stderr: ${stderrTail.trim() || "(empty)"}`;
  if (/address already in use/i.test(stderrTail)) throw new PortInUseError(detail);
  throw new AnvilStartError(detail);
}

/**
 * Kills anvil when this process ends, however it ends. Node's 'exit' event is not enough: it does not
 * fire when the process is killed by a signal (as test runners end their workers), and an orphaned
 * anvil keeps its port and memory. The watchdog is a tiny shell blocked reading a pipe from this
 * process; the pipe closes when this process dies, even by SIGKILL, and the shell then sends SIGTERM.
 */
function startWatchdog(anvilPid: number | undefined): ChildProcess | undefined {
  if (anvilPid === undefined) return undefined;
  const watchdog = spawn("/bin/sh", ["-c", 'read _; kill -TERM "$1" 2>/dev/null', "anvil-watchdog", String(anvilPid)], {
    stdio: ["pipe", "ignore", "ignore"],
  });
  watchdog.on("error", () => {}); // without /bin/sh there is no watchdog; stop() still works
  // Neither the watchdog nor its pipe may keep this process alive.
  watchdog.unref();
  (watchdog.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  return watchdog;
}

/** Resolves when eth_chainId answers with the expected id; rejects after ANVIL_READY_TIMEOUT_MS. */
async function waitUntilReady(rpcUrl: string, chainId: number, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + ANVIL_READY_TIMEOUT_MS;
  while (Date.now() < deadline && !signal.aborted) {
    const answered = await rpcChainId(rpcUrl).catch(() => undefined);
    if (answered !== undefined) {
      if (answered !== chainId) {
        throw new AnvilStartError(`the node on ${rpcUrl} reports chain id ${answered}, expected ${chainId}`);
      }
      return;
    }
    await sleep(READY_POLL_INTERVAL_MS);
  }
  throw new AnvilStartError(`anvil did not answer eth_chainId on ${rpcUrl} within ${ANVIL_READY_TIMEOUT_MS} ms`);
}

async function rpcChainId(rpcUrl: string): Promise<number> {
  const response = await fetch(rpcUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_chainId", params: [] }),
    signal: AbortSignal.timeout(READY_PROBE_TIMEOUT_MS),
  });
  const body = (await response.json()) as { result?: string };
  if (typeof body.result !== "string") throw new Error("no result");
  return Number.parseInt(body.result, 16);
}

async function terminate(child: ChildProcess, exited: Promise<void>): Promise<void> {
  // No pid: the binary never started. An exit code or signal: it has already exited.
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  child.kill("SIGTERM");
  if (await settlesWithin(exited, ANVIL_STOP_GRACE_MS)) return;
  child.kill("SIGKILL");
  if (await settlesWithin(exited, KILL_WAIT_MS)) return;
  throw new Error(`anvil (pid ${child.pid}) did not exit ${ANVIL_STOP_GRACE_MS + KILL_WAIT_MS} ms after SIGTERM and SIGKILL`);
}

/** Asks the OS for a free loopback port by binding port 0, then releases it for anvil. */
async function findFreePort(): Promise<number> {
  const port = await bindAndRelease(0);
  if (port === undefined) throw new AnvilStartError("the OS assigned no free loopback port");
  return port;
}

async function isPortFree(port: number): Promise<boolean> {
  return (await bindAndRelease(port)) !== undefined;
}

/** Binds 127.0.0.1:port and closes it again; resolves to the bound port, or undefined if it is taken. */
function bindAndRelease(port: number): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", (error: NodeJS.ErrnoException) =>
      error.code === "EADDRINUSE" ? resolve(undefined) : reject(error),
    );
    server.listen(port, "127.0.0.1", () => {
      const address = server.address();
      const bound = typeof address === "object" && address !== null ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([promise.then(() => true), timeout]).finally(() => clearTimeout(timer));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function once<T>(fn: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= fn());
}
