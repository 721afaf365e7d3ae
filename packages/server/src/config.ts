/**
 * Configuration from the environment, validated once at start. Every limit is named here with its
 * default and the reason for it. Sandbox mode (no BASE_RPC_URL) runs everything locally; live mode
 * refuses to start without the settings that guard real money.
 */
import { isIP } from "node:net";
import { resolve } from "node:path";
import { type Address, getAddress, isAddress } from "viem";
import { z } from "zod";

const bool = z
  .string()
  .optional()
  .transform((v) => v === "1" || v === "true" || v === "yes");
const int = (def: number, min = 0, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce.number().int().min(min).max(max).default(def);

const EnvSchema = z.object({
  AGENTWALLET_DATA_DIR: z.string().default(".agentwallet"),
  DATABASE_URL: z.string().optional(),
  SQLITE_SYNCHRONOUS: z.enum(["FULL", "NORMAL"]).default("FULL"),
  /**
   * PostgreSQL connections per pool (the request thread and the settlement thread have one each): the most
   * statements a process runs at once. Past them a request waits up to DATABASE_POOL_WAIT_MS for one to come
   * free (or for a new one to connect), then is answered 503 `service_busy`.
   */
  DATABASE_POOL_MAX: int(16, 1, 1_000),
  DATABASE_POOL_WAIT_MS: int(10_000, 10, 120_000),
  /**
   * SQLite: how long a write waits for another connection's (another process's, the other thread's), then 503
   * `service_busy`. At least 100 ms: the settlement thread writes on a connection of its own, so a wait of nothing
   * would refuse ordinary payments whenever its commit overlapped theirs.
   */
  SQLITE_BUSY_TIMEOUT_MS: int(5_000, 100, 120_000),
  HOST: z.string().default("127.0.0.1"),
  PORT: int(8787, 0, 65535),
  PUBLIC_BASE_URL: z.string().optional(),
  /**
   * The proxies in front of the server whose X-Forwarded-For / X-Forwarded-Proto are believed: a comma-separated
   * list of addresses, CIDR ranges and proxy-addr's names (`loopback`, `linklocal`, `uniquelocal`), or a hop
   * count. Off by default: the client is the socket's peer. Read by `trustProxySetting`.
   */
  TRUST_PROXY: z.string().optional(),
  /**
   * Private-network services this deployment may reach, as `address:port` (IPv6 as `[address]:port`): x402 APIs
   * and webhook receivers inside the operator's own network. Each is named exactly; everything else private
   * stays refused, in live mode too. Read by `privateTargetsSetting`.
   */
  PRIVATE_TARGETS: z.string().optional(),
  REDIS_URL: z.string().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Spec: 100 requests per minute per token. */
  RATE_LIMIT_PER_MINUTE: int(100, 1),
  BASE_RPC_URL: z.string().optional(),
  /**
   * Sandbox only: use the dev chain already answering at this URL (TestUSDC and Multicall3 are placed
   * on it if missing) instead of starting one; the sandbox then never stops that chain. For running
   * the sandbox against a chain kept apart from it (fault-injection tests put a proxy in between).
   */
  SANDBOX_CHAIN_RPC_URL: z.string().url().optional(),
  USDC_ADDRESS: z.string().optional(),
  AGENTWALLET_MASTER_MNEMONIC: z.string().optional(),
  AGENTWALLET_MASTER_MNEMONIC_FILE: z.string().optional(),
  RELAYER_PRIVATE_KEY: z.string().optional(),
  TREASURY_ADDRESS: z.string().optional(),
  /** Base blocks come every 2 s; 12 blocks (~24 s) is well past any reorg seen on Base. Sandbox: 2. */
  DEPOSIT_CONFIRMATIONS: z.coerce.number().int().min(0).max(1000).optional(),
  /** Payment receipts are final after this many blocks (0 on a local chain). */
  PAYMENT_CONFIRMATIONS: z.coerce.number().int().min(0).max(1000).optional(),
  DEPOSIT_WEBHOOK_SECRET: z.string().optional(),
  FIAT_WEBHOOK_SECRET: z.string().optional(),
  /** Deposit scans read at most this many blocks per RPC call (providers cap eth_getLogs ranges). */
  DEPOSIT_SCAN_MAX_BLOCKS: int(2_000, 1, 100_000),
  WATCHER_INTERVAL_MS: int(2_000, 50, 600_000),
  WORKER_INTERVAL_MS: int(1_000, 50, 600_000),
  /**
   * Where accepted payments are settled: `thread` (default) runs the dispatcher and the payment worker
   * in a thread of their own with its own database connection, so a settling backlog never delays a
   * request; `inline` runs them on the request thread (one event loop; debugging).
   */
  SETTLEMENT: z.enum(["thread", "inline"]).default("thread"),
  /**
   * The relayer signs at most this many transactions ahead of the chain (signed, not yet mined);
   * further payment steps wait for a block. 16 is geth's default per-sender pool allowance.
   */
  RELAYER_MAX_PENDING_TXS: int(16, 1, 1_024),
  /**
   * How often the relayer looks for nonces the chain lost (a restart from an earlier state, a reorg, a
   * transaction dropped from the pool) and fills them; until then every later transaction waits.
   */
  RELAYER_GAP_CHECK_MS: int(1_000, 50, 600_000),
  /**
   * How often recently completed x402 payments are checked for a settlement the chain lost (a rollback
   * or reorg deeper than the confirmation depth): the merchant's facilitator sent it, so no relayer
   * gap shows it. Each check reads one authorization state per payment completed in the last hour.
   */
  LOST_SETTLEMENT_CHECK_MS: int(15_000, 50, 3_600_000),
  /** RPC calls: every call has a deadline and a bounded number of retries. */
  RPC_TIMEOUT_MS: int(10_000, 100, 120_000),
  RPC_RETRIES: int(2, 0, 10),
  /** A request owns its payment this long; past it a worker takes over (crash recovery). */
  PAYMENT_REQUEST_LEASE_MS: int(60_000, 1_000, 600_000),
  /**
   * A settlement step that fails with an error a retry may cure is tried again after a delay that
   * doubles from the minimum to the maximum; a payment whose steps failed this many times, with nothing
   * sent yet, fails and is credited back (`retries_exhausted`). Defaults: about 6 minutes in all.
   */
  SETTLEMENT_STEP_ERRORS_MAX: int(12, 1, 1_000),
  SETTLEMENT_BACKOFF_MIN_MS: int(500, 1, 600_000),
  SETTLEMENT_BACKOFF_MAX_MS: int(60_000, 1, 3_600_000),
  /** A payment awaiting a person's approval fails (credited back) after this long undecided: 24 h. */
  APPROVAL_TIMEOUT_MS: int(86_400_000, 1_000, 30 * 86_400_000),
  /** Child tokens (POST /v1/tokens): how deep below an operator's token (depth 0) they may go; 3 = child, grandchild, great-grandchild. */
  TOKEN_DEPTH_MAX: int(3, 1, 10),
  /** Child tokens: at most this many active children per token, so one agent cannot mint without bound. */
  TOKEN_CHILDREN_MAX: int(100, 1, 10_000),
  /** Webhooks to clients: requests under way at once per process (a slow receiver holds one slot). */
  WEBHOOK_MAX_IN_FLIGHT: int(16, 1, 1_024),
  /**
   * Webhooks to clients: deliveries to one endpoint under way at once, across processes. The default is the
   * connections kept per receiver address (net/safeFetch.ts), so none waits for a connection; a receiver
   * that hangs holds this many slots of `WEBHOOK_MAX_IN_FLIGHT`, no more.
   */
  WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT: int(4, 1, 64),
  /**
   * One delivery attempt's deadline, counted from when the request can be sent (a connection to the receiver
   * is free; that wait is bounded by as much again); receivers should answer at once and work afterwards.
   */
  WEBHOOK_TIMEOUT_MS: int(10_000, 100, 60_000),
  /**
   * How often due deliveries are looked for (a finished request looks again at once): an event waits
   * about half of it on average. One indexed read per process each time.
   */
  WEBHOOK_INTERVAL_MS: int(250, 50, 600_000),
  /** An endpoint answering nothing but failures this long (default 2 days) is disabled when a delivery gives up. */
  WEBHOOK_DISABLE_AFTER_FAILING_MS: int(2 * 86_400_000, 60_000, 30 * 86_400_000),
  FIAT_SANDBOX_DELAY_MS: int(3_000, 0, 3_600_000),
  /** The audit log keeps entries this many days (default 400: a year and a review), pruned by the housekeeping loop. */
  AUDIT_RETENTION_DAYS: int(400, 1, 3_650),
  /**
   * Completed bank payments stay watched for an ACH return this long (60 days: the longest a consumer
   * account may return a debit it did not authorize), read by one pass this often, each pass reading at most
   * FIAT_RETURN_WATCH_BATCH payouts (Bridge lists at most 100 a page). A provider that cannot list its
   * changes (the sandbox off-ramp) has each watched payout read again once per FIAT_RETURN_RECHECK_MS.
   */
  FIAT_RETURN_WINDOW_DAYS: int(60, 1, 120),
  FIAT_RETURN_WATCH_INTERVAL_MS: int(60_000, 50, 3_600_000),
  FIAT_RETURN_WATCH_BATCH: int(100, 1, 100),
  FIAT_RETURN_RECHECK_MS: int(3_600_000, 50, 7 * 86_400_000),
  /** Sandbox only: `bridge` runs the real Bridge adapter against the local Bridge stand-in. */
  FIAT_PROVIDER: z.enum(["sandbox", "bridge"]).optional(),
  BRIDGE_API_KEY: z.string().min(1).optional(),
  BRIDGE_CUSTOMER_ID: z.string().min(1).max(64).optional(),
  /** Bridge's production API; its sandbox is https://api.sandbox.bridge.xyz. */
  BRIDGE_BASE_URL: z.string().url().default("https://api.bridge.xyz"),
  /** The PEM public key Bridge shows for our webhook endpoint (`\n` escapes allowed). */
  BRIDGE_WEBHOOK_PUBLIC_KEY: z.string().optional(),
  /** The contract's bank details have no account type; ACH needs one. */
  BRIDGE_ACCOUNT_TYPE: z.enum(["checking", "savings"]).default("checking"),
  /** Open transfers are read this often when no webhook came (ACH takes days; webhooks are the fast path). */
  BRIDGE_POLL_INTERVAL_MS: int(60_000, 50, 3_600_000),
  BRIDGE_TIMEOUT_MS: int(15_000, 100, 120_000),
  BRIDGE_RETRIES: int(2, 0, 5),
  /** Comma-separated addresses Bridge sends refunds from, besides each transfer's deposit address. */
  BRIDGE_REFUND_FROM_ADDRESSES: z.string().optional(),
  X402_ALLOW_HTTP: bool,
  X402_ALLOW_PRIVATE_NETWORKS: bool,
  X402_TIMEOUT_MS: int(15_000, 100, 120_000),
  X402_MAX_RESPONSE_BYTES: int(1_048_576, 1_024, 50 * 1_048_576),
  /** We refuse x402 requirements that want an authorization valid for longer than this. */
  X402_MAX_TIMEOUT_SECONDS: int(600, 1, 86_400),
  /** A facilitator whose Bazaar catalogue GET /v1/x402/resources passes through (its base URL). */
  X402_DISCOVERY_URL: z.string().url().optional(),
});

export type Config = DeepReadonly<{
  mode: "sandbox" | "live";
  dataDir: string;
  databaseUrl: string | undefined;
  sqlitePath: string;
  sqliteSynchronous: "FULL" | "NORMAL";
  /** The database's limits on waiting (DATABASE_POOL_MAX, DATABASE_POOL_WAIT_MS, SQLITE_BUSY_TIMEOUT_MS). */
  databaseLimits: { poolMax: number; poolWaitMs: number; sqliteBusyTimeoutMs: number };
  host: string;
  port: number;
  publicBaseUrl: string | undefined;
  /** Fastify's `trustProxy`: off, the trusted proxies' addresses and ranges, or a hop count (TRUST_PROXY). */
  trustProxy: TrustProxy;
  /** `address:port` of the private-network services x402 payments and webhooks may reach (PRIVATE_TARGETS). */
  privateTargets: readonly string[];
  redisUrl: string | undefined;
  logLevel: string;
  rateLimitPerMinute: number;
  chain: {
    rpcUrl: string | undefined;
    /** Sandbox: an already running dev chain to use instead of starting one. */
    sandboxRpcUrl: string | undefined;
    chainId: number;
    usdcAddress: string | undefined;
    rpcTimeoutMs: number;
    rpcRetries: number;
    depositConfirmations: number;
    paymentConfirmations: number;
    depositScanMaxBlocks: number;
    relayerMaxPendingTxs: number;
    relayerGapCheckMs: number;
    lostSettlementCheckMs: number;
  };
  custody: { mnemonic: string | undefined; mnemonicFile: string | undefined; relayerPrivateKey: string | undefined; treasuryAddress: string | undefined };
  webhooks: { depositSecret: string | undefined; fiatSecret: string | undefined };
  /** Webhooks to clients (workers/webhookDelivery.ts); `leaseMs` outlasts one attempt, so only a dead process's lease expires. */
  webhookDelivery: { maxInFlight: number; maxInFlightPerEndpoint: number; timeoutMs: number; intervalMs: number; leaseMs: number; disableAfterFailingMs: number };
  workers: { watcherIntervalMs: number; workerIntervalMs: number; paymentRequestLeaseMs: number; settlement: "thread" | "inline"; retry: { stepErrorsMax: number; backoffMinMs: number; backoffMaxMs: number } };
  spending: { approvalTimeoutMs: number };
  delegation: { depthMax: number; childrenMax: number };
  /** The audit log's entries are pruned once older than this (services/audit.ts). */
  audit: { retentionDays: number };
  fiat: {
    sandboxDelayMs: number;
    /** Completed bank payments watched for returns (rails/fiat/returnWatch.ts). */
    returnWatch: { windowMs: number; intervalMs: number; batchMax: number; recheckMs: number };
    /** `sandbox`: the built-in off-ramp; `bridge`: the Bridge adapter; `none`: live without Bridge settings (503). */
    provider: "sandbox" | "bridge" | "none";
    /** Live: from BRIDGE_*; sandbox with FIAT_PROVIDER=bridge: filled in when the stand-in starts. */
    bridge: BridgeSettings | undefined;
  };
  /**
   * `allowedTargets`: `address:port` of non-public targets allowed without `allowPrivateNetworks` — in the
   * sandbox, its own demo merchant and facilitator (added once they listen). Not an environment setting.
   */
  x402: { allowHttp: boolean; allowPrivateNetworks: boolean; allowedTargets: string[]; timeoutMs: number; maxResponseBytes: number; maxTimeoutSeconds: number; discoveryUrl?: string };
}>;

type DeepReadonly<T> = T extends (infer E)[] ? readonly DeepReadonly<E>[] : T extends object ? { readonly [K in keyof T]: DeepReadonly<T[K]> } : T;

export type BridgeSettings = {
  apiKey: string;
  customerId: string;
  /** Bridge's production address by default; its sandbox is https://api.sandbox.bridge.xyz. */
  baseUrl: string;
  webhookPublicKey: string | undefined;
  /** The contract's bank details carry no account type: the operator's default. */
  checkingOrSavings: "checking" | "savings";
  pollIntervalMs: number;
  timeoutMs: number;
  /** Retries of one call on a timeout, a 5xx or a 429 (so at most retries + 1 attempts). */
  retries: number;
  /** Addresses Bridge refunds from, besides each transfer's deposit address (not credited as deposits). */
  refundFromAddresses: readonly Address[];
};

/** Base mainnet USDC (Circle). */
export const BASE_USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const BASE_CHAIN_ID = 8453;

export class ConfigError extends Error {
  override name = "ConfigError";
}

/**
 * `signs: false` is for processes that sign nothing and reach no chain (the CLI's project, token and
 * approval commands): live mode then does not ask for the master key source, relayer key and treasury.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: { dataDir?: string; port?: number; host?: string } = {}, opts: { signs?: boolean } = {}): Config {
  refuseInlineComments(env);
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    throw new ConfigError(`Invalid setting ${first.path.join(".")}: ${first.message}`);
  }
  const e = parsed.data;
  const mode = e.BASE_RPC_URL ? "live" : "sandbox";
  const dataDir = resolve(overrides.dataDir ?? e.AGENTWALLET_DATA_DIR);
  const privateTargets = privateTargetsSetting(e.PRIVATE_TARGETS);
  const config: Config = {
    mode,
    dataDir,
    databaseUrl: checkDatabaseUrl(e.DATABASE_URL),
    sqlitePath: resolve(dataDir, "agentwallet.db"),
    sqliteSynchronous: e.SQLITE_SYNCHRONOUS,
    databaseLimits: { poolMax: e.DATABASE_POOL_MAX, poolWaitMs: e.DATABASE_POOL_WAIT_MS, sqliteBusyTimeoutMs: e.SQLITE_BUSY_TIMEOUT_MS },
    host: overrides.host ?? e.HOST,
    port: overrides.port ?? e.PORT,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    trustProxy: trustProxySetting(e.TRUST_PROXY),
    privateTargets,
    redisUrl: e.REDIS_URL,
    logLevel: e.LOG_LEVEL,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    chain: {
      rpcUrl: e.BASE_RPC_URL,
      sandboxRpcUrl: e.SANDBOX_CHAIN_RPC_URL,
      chainId: BASE_CHAIN_ID,
      usdcAddress: e.USDC_ADDRESS ?? (mode === "live" ? BASE_USDC_ADDRESS : undefined),
      rpcTimeoutMs: e.RPC_TIMEOUT_MS,
      rpcRetries: e.RPC_RETRIES,
      depositConfirmations: e.DEPOSIT_CONFIRMATIONS ?? (mode === "live" ? 12 : 2),
      paymentConfirmations: e.PAYMENT_CONFIRMATIONS ?? (mode === "live" ? 3 : 0),
      depositScanMaxBlocks: e.DEPOSIT_SCAN_MAX_BLOCKS,
      relayerMaxPendingTxs: e.RELAYER_MAX_PENDING_TXS,
      relayerGapCheckMs: e.RELAYER_GAP_CHECK_MS,
      lostSettlementCheckMs: e.LOST_SETTLEMENT_CHECK_MS,
    },
    custody: {
      mnemonic: e.AGENTWALLET_MASTER_MNEMONIC,
      mnemonicFile: e.AGENTWALLET_MASTER_MNEMONIC_FILE,
      relayerPrivateKey: e.RELAYER_PRIVATE_KEY,
      treasuryAddress: e.TREASURY_ADDRESS,
    },
    webhooks: { depositSecret: e.DEPOSIT_WEBHOOK_SECRET, fiatSecret: e.FIAT_WEBHOOK_SECRET },
    webhookDelivery: {
      maxInFlight: e.WEBHOOK_MAX_IN_FLIGHT,
      maxInFlightPerEndpoint: e.WEBHOOK_MAX_IN_FLIGHT_PER_ENDPOINT,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      intervalMs: e.WEBHOOK_INTERVAL_MS,
      // The wait for a free connection and the attempt's deadline, with a margin to record the outcome.
      leaseMs: 2 * e.WEBHOOK_TIMEOUT_MS + 5_000,
      disableAfterFailingMs: e.WEBHOOK_DISABLE_AFTER_FAILING_MS,
    },
    workers: { watcherIntervalMs: e.WATCHER_INTERVAL_MS, workerIntervalMs: e.WORKER_INTERVAL_MS, paymentRequestLeaseMs: e.PAYMENT_REQUEST_LEASE_MS, settlement: e.SETTLEMENT, retry: { stepErrorsMax: e.SETTLEMENT_STEP_ERRORS_MAX, backoffMinMs: e.SETTLEMENT_BACKOFF_MIN_MS, backoffMaxMs: Math.max(e.SETTLEMENT_BACKOFF_MIN_MS, e.SETTLEMENT_BACKOFF_MAX_MS) } },
    spending: { approvalTimeoutMs: e.APPROVAL_TIMEOUT_MS },
    delegation: { depthMax: e.TOKEN_DEPTH_MAX, childrenMax: e.TOKEN_CHILDREN_MAX },
    audit: { retentionDays: e.AUDIT_RETENTION_DAYS },
    fiat: {
      sandboxDelayMs: e.FIAT_SANDBOX_DELAY_MS,
      returnWatch: { windowMs: e.FIAT_RETURN_WINDOW_DAYS * 86_400_000, intervalMs: e.FIAT_RETURN_WATCH_INTERVAL_MS, batchMax: e.FIAT_RETURN_WATCH_BATCH, recheckMs: e.FIAT_RETURN_RECHECK_MS },
      ...fiatSettings(e, mode),
    },
    x402: {
      allowHttp: e.X402_ALLOW_HTTP,
      allowPrivateNetworks: e.X402_ALLOW_PRIVATE_NETWORKS,
      // The sandbox adds its own demo merchant and facilitator once they listen.
      allowedTargets: [...privateTargets],
      timeoutMs: e.X402_TIMEOUT_MS,
      maxResponseBytes: e.X402_MAX_RESPONSE_BYTES,
      maxTimeoutSeconds: e.X402_MAX_TIMEOUT_SECONDS,
      discoveryUrl: e.X402_DISCOVERY_URL,
    },
  };
  if (mode === "live") assertLiveSettings(config, opts.signs ?? true);
  if (mode === "live" && config.chain.sandboxRpcUrl) throw new ConfigError("SANDBOX_CHAIN_RPC_URL is for the sandbox only; live mode uses BASE_RPC_URL.");
  return freezeConfig(config);
}

/**
 * A configuration frozen to its leaves, so that it is settled before anything opens: an assignment to any
 * field, or a push to any of its lists, throws a TypeError instead of changing what another part already
 * read (every process and every part of one holds the same object). `loadConfig` returns one; the sandbox
 * (sandbox/startSandbox.ts) builds its own from a loaded one, then freezes that.
 */
export function freezeConfig(config: Config): Config {
  return deepFreeze(config);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const field of Object.values(value)) deepFreeze(field);
    Object.freeze(value);
  }
  return value;
}

/** Whitespace, then `#`: an inline comment. A `#` right after other characters (a URL's fragment, a secret's) is not one. */
const INLINE_COMMENT = /\s#/;

/**
 * systemd's EnvironmentFile keeps everything after `=` as the value, an inline `# comment` included, while a
 * shell that sources the same file drops it: the service and the CLI would read different settings, and a
 * URL, path or secret would be taken with the comment as part of it. Each setting of the service is checked
 * (nothing else in the environment); only its name is shown, as the value may be a secret.
 */
function refuseInlineComments(env: NodeJS.ProcessEnv): void {
  for (const name of Object.keys(EnvSchema.shape)) {
    if (INLINE_COMMENT.test(env[name] ?? "")) {
      throw new ConfigError(`${name} ends in an inline comment (whitespace, then #): systemd's EnvironmentFile keeps it as part of the value. Move the comment to a line of its own (a # with no whitespace before it stays part of the value).`);
    }
  }
}

export type TrustProxy = false | number | readonly string[];

/** More hops than any real chain of proxies (a CDN, a load balancer, an ingress). */
const TRUST_PROXY_HOPS_MAX = 10;
const PROXY_ADDR_NAMES: ReadonlySet<string> = new Set(["loopback", "linklocal", "uniquelocal"]);

/**
 * TRUST_PROXY as Fastify's `trustProxy`. `true` (every peer) is refused: any client could then name itself
 * in X-Forwarded-For and escape its sign-in limit.
 */
function trustProxySetting(raw: string | undefined): TrustProxy {
  const value = (raw ?? "").trim();
  if (value === "" || value === "false" || value === "0") return false;
  const how = "Give the addresses or CIDR ranges of the proxies in front of the server (TRUST_PROXY=10.0.0.7,10.1.0.0/16), or the number of proxies (TRUST_PROXY=1)";
  if (value === "true") throw new ConfigError(`TRUST_PROXY=true trusts every peer, so any client could choose its own address. ${how}.`);
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > TRUST_PROXY_HOPS_MAX) throw new ConfigError(`TRUST_PROXY: a hop count of ${hops}; it is at most ${TRUST_PROXY_HOPS_MAX}. ${how}.`);
    return hops;
  }
  const entries = value.split(",").map((x) => x.trim());
  for (const entry of entries) {
    if (entry === "") throw new ConfigError(`TRUST_PROXY has an empty entry ("${value}"). ${how}.`);
    if (PROXY_ADDR_NAMES.has(entry)) continue;
    const [address, prefix, ...rest] = entry.split("/");
    const family = isIP(address!);
    if (family === 0 || rest.length > 0) throw new ConfigError(`TRUST_PROXY: "${entry}" is not an IP address, a CIDR range or one of loopback, linklocal, uniquelocal (names are not resolved). ${how}.`);
    const prefixMax = family === 4 ? 32 : 128;
    if (prefix !== undefined && !(/^\d{1,3}$/.test(prefix) && Number(prefix) <= prefixMax)) {
      throw new ConfigError(`TRUST_PROXY: "${entry}" has a prefix length that is not 0-${prefixMax}. ${how}.`);
    }
  }
  return entries;
}

/**
 * PRIVATE_TARGETS as the SSRF-safe fetcher's `allowedTargets` (`address:port`, IPv6 in brackets): literal addresses
 * only, as the fetcher compares the address it dials (a name could resolve anywhere), and a port always.
 */
function privateTargetsSetting(raw: string | undefined): string[] {
  const value = (raw ?? "").trim();
  if (value === "") return [];
  const how = "Give each private service as address:port, e.g. PRIVATE_TARGETS=10.0.0.5:443,[fd00::7]:8443 (addresses, not names: the address dialled is what is checked)";
  return value.split(",").map((x) => {
    const entry = x.trim();
    const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(entry);
    const address = m?.[1] ?? m?.[2];
    const port = Number(m?.[3]);
    if (!m || isIP(address!) !== (m[1] ? 6 : 4) || port < 1 || port > 65535) throw new ConfigError(`PRIVATE_TARGETS: "${entry.slice(0, 80)}" is not address:port. ${how}.`);
    return m[1] ? `[${address!.toLowerCase()}]:${port}` : `${address}:${port}`;
  });
}

/** Which off-ramp: Bridge when its settings are given (live), the built-in one in the sandbox. */
function fiatSettings(e: z.infer<typeof EnvSchema>, mode: "sandbox" | "live"): Pick<Config["fiat"], "provider" | "bridge"> {
  if (mode === "sandbox") {
    if (e.BRIDGE_API_KEY || e.BRIDGE_CUSTOMER_ID) throw new ConfigError("BRIDGE_API_KEY and BRIDGE_CUSTOMER_ID are live settings; the sandbox runs the Bridge stand-in with FIAT_PROVIDER=bridge.");
    return { provider: e.FIAT_PROVIDER ?? "sandbox", bridge: undefined };
  }
  if (e.FIAT_PROVIDER === "sandbox") throw new ConfigError("FIAT_PROVIDER=sandbox is for the sandbox only; live mode uses Bridge (BRIDGE_API_KEY, BRIDGE_CUSTOMER_ID).");
  if (!e.BRIDGE_API_KEY && !e.BRIDGE_CUSTOMER_ID) return { provider: "none", bridge: undefined };
  if (!e.BRIDGE_API_KEY || !e.BRIDGE_CUSTOMER_ID) throw new ConfigError(`The fiat rail needs both BRIDGE_API_KEY and BRIDGE_CUSTOMER_ID; ${e.BRIDGE_API_KEY ? "BRIDGE_CUSTOMER_ID" : "BRIDGE_API_KEY"} is missing.`);
  const refundFrom = (e.BRIDGE_REFUND_FROM_ADDRESSES ?? "").split(",").map((a) => a.trim()).filter(Boolean);
  const bad = refundFrom.find((a) => !isAddress(a));
  if (bad) throw new ConfigError(`BRIDGE_REFUND_FROM_ADDRESSES: ${bad} is not an address.`);
  return { provider: "bridge", bridge: bridgeSettings(e, { apiKey: e.BRIDGE_API_KEY, customerId: e.BRIDGE_CUSTOMER_ID, baseUrl: e.BRIDGE_BASE_URL, webhookPublicKey: e.BRIDGE_WEBHOOK_PUBLIC_KEY, refundFromAddresses: refundFrom.map((a) => getAddress(a)) }) };
}

/** Bridge settings with this deployment's limits, for the given credentials and address. */
export function bridgeSettings(
  e: Pick<z.infer<typeof EnvSchema>, "BRIDGE_ACCOUNT_TYPE" | "BRIDGE_POLL_INTERVAL_MS" | "BRIDGE_TIMEOUT_MS" | "BRIDGE_RETRIES">,
  c: { apiKey: string; customerId: string; baseUrl: string; webhookPublicKey: string | undefined; refundFromAddresses: Address[] },
): BridgeSettings {
  return {
    ...c,
    webhookPublicKey: c.webhookPublicKey?.replace(/\\n/g, "\n"),
    checkingOrSavings: e.BRIDGE_ACCOUNT_TYPE,
    pollIntervalMs: e.BRIDGE_POLL_INTERVAL_MS,
    timeoutMs: e.BRIDGE_TIMEOUT_MS,
    retries: e.BRIDGE_RETRIES,
  };
}

/** Live mode guards real money: every missing or unsafe setting is named. */
function assertLiveSettings(c: Config, signs: boolean): void {
  const missing: string[] = [];
  if (signs && !c.custody.mnemonic && !c.custody.mnemonicFile) missing.push("AGENTWALLET_MASTER_MNEMONIC or AGENTWALLET_MASTER_MNEMONIC_FILE (the master key source)");
  if (signs && !c.custody.relayerPrivateKey) missing.push("RELAYER_PRIVATE_KEY (the account that submits transfers and pays gas)");
  if (signs && !c.custody.treasuryAddress) missing.push("TREASURY_ADDRESS (where platform fees go)");
  if (missing.length) throw new ConfigError(`Live mode (BASE_RPC_URL is set) needs: ${missing.join("; ")}.`);
  if (c.x402.allowHttp || c.x402.allowPrivateNetworks) {
    throw new ConfigError("X402_ALLOW_HTTP and X402_ALLOW_PRIVATE_NETWORKS are for the sandbox and tests only; live mode refuses them.");
  }
}

const DATABASE_URL_SHAPE = "postgres://USER:PASSWORD@HOST:PORT/DATABASE";

/**
 * DATABASE_URL as the PostgreSQL driver will read it, or a ConfigError saying what is wrong with it. The
 * driver itself reads almost anything (`mysql://…` as a role to log in with, `garbage` as a host), so its
 * errors name the wrong thing. Nothing of the value is echoed but its scheme: it may hold a password.
 * Empty is unset (SQLite).
 */
function checkDatabaseUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(value)?.[1]?.toLowerCase();
  if (!scheme || !value.slice(scheme.length + 1).startsWith("//")) {
    throw new ConfigError(`DATABASE_URL is not a URL; it must look like ${DATABASE_URL_SHAPE} (or be unset for SQLite in the data directory).`);
  }
  if (scheme !== "postgres" && scheme !== "postgresql") {
    throw new ConfigError(`DATABASE_URL must start with postgres:// or postgresql:// (it starts with ${scheme}://): Agent Wallet keeps its ledger in PostgreSQL, or in SQLite when DATABASE_URL is unset.`);
  }
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new ConfigError(`DATABASE_URL cannot be read as ${DATABASE_URL_SHAPE}: check that the port is a number from 1 to 65535 and that the user name and password percent-encode any of : / @ # ? % (e.g. # as %23).`);
  }
  if (url.hash) throw new ConfigError("DATABASE_URL has a '#' outside the password's percent-encoding (write # as %23 in a password).");
  if (!url.hostname && !url.searchParams.get("host")) {
    throw new ConfigError(`DATABASE_URL names no host; it must look like ${DATABASE_URL_SHAPE} (or postgres:///DATABASE?host=/path/of/the/socket/directory).`);
  }
  return value;
}

/** A database URL as it may be shown: the password, if any, replaced by `***`. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = "***";
    return u.toString();
  } catch {
    // Not a URL the WHATWG parser takes: hide everything between "://user:" and "@".
    return url.replace(/(\/\/[^:/@]*:)[^@]*@/, "$1***@");
  }
}

/** The database this configuration uses, named for people: `SQLite /abs/path.db` or `PostgreSQL postgres://…`. */
export function describeDatabase(config: Pick<Config, "databaseUrl" | "sqlitePath">): string {
  return config.databaseUrl ? `PostgreSQL ${redactUrl(config.databaseUrl)}` : `SQLite ${config.sqlitePath}`;
}
