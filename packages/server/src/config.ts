/**
 * Configuration from the environment, validated once at start. Every limit is named here with its
 * default and the reason for it. Sandbox mode (no BASE_RPC_URL) runs everything locally; live mode
 * refuses to start without the settings that guard real money.
 */
import { resolve } from "node:path";
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
  HOST: z.string().default("127.0.0.1"),
  PORT: int(8787, 0, 65535),
  PUBLIC_BASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  /** Spec: 100 requests per minute per token. */
  RATE_LIMIT_PER_MINUTE: int(100, 1),
  BASE_RPC_URL: z.string().optional(),
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
  /** RPC calls: every call has a deadline and a bounded number of retries. */
  RPC_TIMEOUT_MS: int(10_000, 100, 120_000),
  RPC_RETRIES: int(2, 0, 10),
  /** A request owns its payment this long; past it a worker takes over (crash recovery). */
  PAYMENT_REQUEST_LEASE_MS: int(60_000, 1_000, 600_000),
  FIAT_SANDBOX_DELAY_MS: int(3_000, 0, 3_600_000),
  X402_ALLOW_HTTP: bool,
  X402_ALLOW_PRIVATE_NETWORKS: bool,
  X402_TIMEOUT_MS: int(15_000, 100, 120_000),
  X402_MAX_RESPONSE_BYTES: int(1_048_576, 1_024, 50 * 1_048_576),
  /** We refuse x402 requirements that want an authorization valid for longer than this. */
  X402_MAX_TIMEOUT_SECONDS: int(600, 1, 86_400),
});

export type Config = {
  mode: "sandbox" | "live";
  dataDir: string;
  databaseUrl: string | undefined;
  sqlitePath: string;
  sqliteSynchronous: "FULL" | "NORMAL";
  host: string;
  port: number;
  publicBaseUrl: string | undefined;
  redisUrl: string | undefined;
  logLevel: string;
  rateLimitPerMinute: number;
  chain: {
    rpcUrl: string | undefined;
    chainId: number;
    usdcAddress: string | undefined;
    rpcTimeoutMs: number;
    rpcRetries: number;
    depositConfirmations: number;
    paymentConfirmations: number;
    depositScanMaxBlocks: number;
    relayerMaxPendingTxs: number;
  };
  custody: { mnemonic: string | undefined; mnemonicFile: string | undefined; relayerPrivateKey: string | undefined; treasuryAddress: string | undefined };
  webhooks: { depositSecret: string | undefined; fiatSecret: string | undefined };
  workers: { watcherIntervalMs: number; workerIntervalMs: number; paymentRequestLeaseMs: number; settlement: "thread" | "inline" };
  fiat: { sandboxDelayMs: number };
  x402: { allowHttp: boolean; allowPrivateNetworks: boolean; timeoutMs: number; maxResponseBytes: number; maxTimeoutSeconds: number };
};

/** Base mainnet USDC (Circle). */
export const BASE_USDC_ADDRESS = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const BASE_CHAIN_ID = 8453;

export class ConfigError extends Error {
  override name = "ConfigError";
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: { dataDir?: string; port?: number; host?: string } = {}): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const first = parsed.error.issues[0]!;
    throw new ConfigError(`Invalid setting ${first.path.join(".")}: ${first.message}`);
  }
  const e = parsed.data;
  const mode = e.BASE_RPC_URL ? "live" : "sandbox";
  const dataDir = resolve(overrides.dataDir ?? e.AGENTWALLET_DATA_DIR);
  const config: Config = {
    mode,
    dataDir,
    databaseUrl: e.DATABASE_URL,
    sqlitePath: resolve(dataDir, "agentwallet.db"),
    sqliteSynchronous: e.SQLITE_SYNCHRONOUS,
    host: overrides.host ?? e.HOST,
    port: overrides.port ?? e.PORT,
    publicBaseUrl: e.PUBLIC_BASE_URL,
    redisUrl: e.REDIS_URL,
    logLevel: e.LOG_LEVEL,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    chain: {
      rpcUrl: e.BASE_RPC_URL,
      chainId: BASE_CHAIN_ID,
      usdcAddress: e.USDC_ADDRESS ?? (mode === "live" ? BASE_USDC_ADDRESS : undefined),
      rpcTimeoutMs: e.RPC_TIMEOUT_MS,
      rpcRetries: e.RPC_RETRIES,
      depositConfirmations: e.DEPOSIT_CONFIRMATIONS ?? (mode === "live" ? 12 : 2),
      paymentConfirmations: e.PAYMENT_CONFIRMATIONS ?? (mode === "live" ? 3 : 0),
      depositScanMaxBlocks: e.DEPOSIT_SCAN_MAX_BLOCKS,
      relayerMaxPendingTxs: e.RELAYER_MAX_PENDING_TXS,
    },
    custody: {
      mnemonic: e.AGENTWALLET_MASTER_MNEMONIC,
      mnemonicFile: e.AGENTWALLET_MASTER_MNEMONIC_FILE,
      relayerPrivateKey: e.RELAYER_PRIVATE_KEY,
      treasuryAddress: e.TREASURY_ADDRESS,
    },
    webhooks: { depositSecret: e.DEPOSIT_WEBHOOK_SECRET, fiatSecret: e.FIAT_WEBHOOK_SECRET },
    workers: { watcherIntervalMs: e.WATCHER_INTERVAL_MS, workerIntervalMs: e.WORKER_INTERVAL_MS, paymentRequestLeaseMs: e.PAYMENT_REQUEST_LEASE_MS, settlement: e.SETTLEMENT },
    fiat: { sandboxDelayMs: e.FIAT_SANDBOX_DELAY_MS },
    x402: {
      allowHttp: e.X402_ALLOW_HTTP,
      allowPrivateNetworks: e.X402_ALLOW_PRIVATE_NETWORKS,
      timeoutMs: e.X402_TIMEOUT_MS,
      maxResponseBytes: e.X402_MAX_RESPONSE_BYTES,
      maxTimeoutSeconds: e.X402_MAX_TIMEOUT_SECONDS,
    },
  };
  if (mode === "live") assertLiveSettings(config);
  return config;
}

/** Live mode guards real money: every missing or unsafe setting is named. */
function assertLiveSettings(c: Config): void {
  const missing: string[] = [];
  if (!c.custody.mnemonic && !c.custody.mnemonicFile) missing.push("AGENTWALLET_MASTER_MNEMONIC or AGENTWALLET_MASTER_MNEMONIC_FILE (the master key source)");
  if (!c.custody.relayerPrivateKey) missing.push("RELAYER_PRIVATE_KEY (the account that submits transfers and pays gas)");
  if (!c.custody.treasuryAddress) missing.push("TREASURY_ADDRESS (where platform fees go)");
  if (missing.length) throw new ConfigError(`Live mode (BASE_RPC_URL is set) needs: ${missing.join("; ")}.`);
  if (c.x402.allowHttp || c.x402.allowPrivateNetworks) {
    throw new ConfigError("X402_ALLOW_HTTP and X402_ALLOW_PRIVATE_NETWORKS are for the sandbox and tests only; live mode refuses them.");
  }
}
