/**
 * The one place adapters are built from configuration: database, ledger, custody, keys, rate limiter,
 * rails. Every process builds its dependencies here in the same steps (`openDeps`, `connectRails`,
 * `assembleContext`), with its own options.
 */
import { randomBytes } from "node:crypto";
import { Redis } from "ioredis";
import pino, { type Logger } from "pino";
import { type Config, describeDatabase } from "./config.ts";
import type { Hex } from "viem";
import type { AppContext } from "./context.ts";
import type { ChainRuntime } from "./chain/runtime.ts";
import { createHdCustody, isBip39Phrase, NOT_BIP39_PHRASE } from "./chain/custody.ts";
import { loadBankAccountKey, loadRecipientHashKey, loadWebhookSecretKey, masterKeySource, masterMnemonic } from "./masterKeys.ts";
import { createSigningPool } from "./chain/signingPool.ts";
import { sealBankRecipient } from "./domain/bankAccount.ts";
import { openLedger } from "./ledger/open.ts";
import type { Ledger } from "./ledger/store.ts";
import type { HttpHooks } from "./http/httpDeps.ts";
import { createMemoryRateLimiter, createRedisRateLimiter, type RateLimiter } from "./http/rateLimit.ts";
import { type BuiltRails, buildRails } from "./rails/buildRails.ts";
import type { BridgeSettings } from "./rails/fiat/bridgeProvider.ts";
import { type BuiltFiatProvider, buildFiatProvider } from "./rails/fiat/buildFiatProvider.ts";
import type { RailDeps } from "./rails/railDeps.ts";
import type { Rails } from "./rails/rails.ts";
import type { ServiceDeps } from "./services/serviceDeps.ts";
import { claimDeployment } from "./services/deployment.ts";
import { NOT_BIP39_KEPT, refuseForeignMasterKey } from "./services/masterKeyCheck.ts";
import { newId, systemClock } from "./ids.ts";

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      // Belt and braces: nothing we log carries these, and if a future change did they would be censored.
      redact: { paths: ["req.headers.authorization", "headers.authorization", "authorization", "token", "mnemonic", "privateKey"], censor: "[redacted]" },
      base: { service: "agentwallet" },
    },
    destination as never,
  );
}

/**
 * SQLite with settlement in its own thread: the request thread's connection leaves WAL checkpoints
 * (copying the log into the database file, several ms each) to the settlement thread, which runs one
 * every 200 ms; it does one itself only if the log grows this far (~64 MB) because the settlement
 * thread is not running.
 */
export const REQUEST_THREAD_CHECKPOINT_PAGES = 16_000;

function createRateLimiter(config: Config): RateLimiter {
  if (!config.redisUrl) return createMemoryRateLimiter(config.rateLimitPerMinute);
  const redis = new Redis(config.redisUrl, { maxRetriesPerRequest: 2, connectTimeout: 5_000, enableOfflineQueue: true });
  return createRedisRateLimiter(redis, config.rateLimitPerMinute);
}

export function loadCustody(config: Config) {
  const mnemonic = masterMnemonic(config);
  return createHdCustody(mnemonic, { pool: createSigningPool(mnemonic, 1) });
}

/** Bank payments read per batch when sealing account numbers written before they were sealed. */
const SEAL_BATCH = 500;

/**
 * Seals the account numbers of open bank payments written before migration 0023, which kept them in the
 * clear until their payout (the migration runs without the key). Each row is changed only if still as read.
 */
async function sealBankAccountsInClear(ledger: Ledger, key: Uint8Array): Promise<void> {
  for (;;) {
    const rows = await ledger.payments.openBankRecipientsInClear(SEAL_BATCH);
    let changed = 0;
    for (const r of rows) if (await ledger.payments.replaceRecipientJson(r.id, r.recipientJson!, sealBankRecipient(key, r.projectId, r.recipientJson!))) changed++;
    if (rows.length < SEAL_BATCH || changed === 0) return;
  }
}

type DepsOptions = {
  /** Whether this process answers requests: only then is a rate limiter built (the settlement thread and the CLI need none). */
  serveRequests: boolean;
  /** The lease owner of this process's payments: the settlement thread continues its request process's; new otherwise. */
  instanceId?: string;
  /** SQLite: how far the write-ahead log may grow before this connection checkpoints it itself. */
  checkpointPages?: number;
};

/** What every process of the service opens first: the rails' dependencies with the whole ledger, and the keys derived from the master key source. */
type BaseDeps = RailDeps & Required<Pick<ServiceDeps, "ledger" | "recipientHashKey" | "webhookSecretKey">>;

export type OpenedDeps = {
  base: Readonly<BaseDeps>;
  /** Built only with `serveRequests`. */
  rateLimiter: RateLimiter | undefined;
  /** Closes what `openDeps` opened, in reverse. */
  close(): Promise<void>;
};

/**
 * Step one of every process (the request process, the settlement thread, the CLI's ops commands): the
 * ledger, custody, clock, ids and keys, and a rate limiter where requests are served. The rails come
 * next (`connectRails`), then the request process's context is assembled whole (`assembleContext`).
 */
export async function openDeps(config: Config, logger: Logger, opts: DepsOptions): Promise<OpenedDeps> {
  // The keys first: they need only the master key source, so a missing one fails before anything is opened
  // (an open database or signing thread would keep a failed process alive).
  const recipientHashKey = loadRecipientHashKey(config);
  const webhookSecretKey = loadWebhookSecretKey(config);
  const bankAccountKey = loadBankAccountKey(config);
  const { ledger, opened } = await openLedger(config, { checkpointPages: opts.checkpointPages });
  // A live process on a test deployment's database (or the reverse) stops here, before it opens anything else,
  // and so does a live process whose master key does not derive the wallets the database records (it would sign
  // for none of them, and seal bank accounts under a key the deployment cannot open); then bank account numbers
  // written before they were sealed are sealed under the key. The sandbox's key is its own data directory's.
  try {
    await claimDeployment({ ledger, clock: systemClock }, config, describeDatabase(config));
    if (config.mode === "live") {
      const mnemonic = masterMnemonic(config);
      const verdict = await refuseForeignMasterKey(ledger.projects, createHdCustody(mnemonic), masterKeySource(config), isBip39Phrase(mnemonic));
      // Said once, by the process that answers requests (its settlement thread opens the same dependencies).
      if (verdict.kind === "not_bip39" && opts.serveRequests) logger.warn({ source: masterKeySource(config) }, `the master mnemonic ${NOT_BIP39_PHRASE}; ${NOT_BIP39_KEPT}`);
    }
    await sealBankAccountsInClear(ledger, bankAccountKey);
  } catch (err) {
    await opened.close();
    throw err;
  }
  const rateLimiter = opts.serveRequests ? createRateLimiter(config) : undefined;
  const custody = loadCustody(config);
  const base: BaseDeps = {
    config,
    ledger,
    custody,
    clock: systemClock,
    newId,
    logger,
    instanceId: opts.instanceId ?? `${process.pid}-${randomBytes(4).toString("hex")}`,
    recipientHashKey,
    webhookSecretKey,
    bankAccountKey,
  };
  return {
    base: Object.freeze(base),
    rateLimiter,
    async close() {
      await rateLimiter?.close();
      await custody.close();
      await opened.close();
    },
  };
}

type ConnectRailsOptions = {
  /** The sandbox off-ramp's key (the chain runtime's), when there is one. */
  offrampKey: Hex | undefined;
  /** Bridge settings other than the configuration's (the sandbox's stand-in, handed to the settlement thread). */
  bridge?: BridgeSettings;
  /** The sandbox off-ramp's webhook secret, where it differs from the configuration's. */
  webhookSecret?: string;
  onFinal?: (p: { rail: string }, outcome: string) => void;
};

/** Step two: the off-ramp of the deployment and the rails over the chain, the same in every process. */
export async function connectRails(base: RailDeps, chain: ChainRuntime, o: ConnectRailsOptions): Promise<BuiltRails & { fiat: BuiltFiatProvider }> {
  const fiat = buildFiatProvider({ config: base.config, ledger: base.ledger, chain: chain.client, logger: base.logger, offrampKey: o.offrampKey, bridge: o.bridge, webhookSecret: o.webhookSecret });
  const built = await buildRails(base, chain, { fiatProvider: fiat?.provider, onFinal: o.onFinal });
  return { ...built, fiat };
}

/**
 * Step three, in the request process: its whole context, given everything at once and frozen, so no
 * part of it is filled in or replaced later (an assignment throws).
 */
export function assembleContext(deps: OpenedDeps, parts: { rails: Rails | undefined; dispatch?: ServiceDeps["dispatch"]; afterAnswer?: ServiceDeps["afterAnswer"]; hooks: HttpHooks }): Readonly<AppContext> {
  if (!deps.rateLimiter) throw new Error("a context that serves requests needs deps opened with serveRequests");
  return Object.freeze({ ...deps.base, rateLimiter: deps.rateLimiter, rails: parts.rails, dispatch: parts.dispatch, afterAnswer: parts.afterAnswer, hooks: Object.freeze({ ...parts.hooks }) });
}
