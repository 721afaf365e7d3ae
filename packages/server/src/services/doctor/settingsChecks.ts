/**
 * `doctor`'s checks of the settings around the chain: the public URL, the secrets on disk (the master key
 * file, the SQLite files, the data directory), Redis when configured, Bridge when configured.
 */
import { createPublicKey } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import type { Config } from "../../config.ts";
import { createHdCustody, isBip39Phrase, loadMasterMnemonic, NOT_BIP39_PHRASE } from "../../chain/custody.ts";
import { MASTER_KEY_MISMATCH_FIX, NOT_BIP39_FIX, NOT_BIP39_KEPT, type RecordedWallet, describeMasterKeyMismatch, judgeMasterKey } from "../masterKeyCheck.ts";
import { readBridgeCustomer } from "../../rails/fiat/readBridgeCustomer.ts";
import { type Check, fail, ok, warn } from "./check.ts";

/** Group and other permission bits: a secret's file has none of them. */
const NOT_OWNER = 0o077;
const REDIS_TIMEOUT_MS = 3_000;

export function publicUrlCheck(config: Config): Check {
  const u = config.publicBaseUrl;
  if (config.mode !== "live") return ok("public url", `sandbox: ${u ?? "unset"}`);
  if (!u) return warn("public url", "PUBLIC_BASE_URL is not set", "set PUBLIC_BASE_URL=https://… (the address clients and Bridge's webhooks reach, behind the TLS proxy)");
  let parsed: URL;
  try {
    parsed = new URL(u);
  } catch {
    return fail("public url", `PUBLIC_BASE_URL "${u}" is not a URL`, "set PUBLIC_BASE_URL=https://wallet.example.com");
  }
  if (parsed.protocol !== "https:") return fail("public url", `PUBLIC_BASE_URL ${u} is not https`, "serve the API behind a TLS reverse proxy and set PUBLIC_BASE_URL=https://… (docs/deploy.md, \"TLS\")");
  return ok("public url", `${u}`);
}

/** Where the master key is read from: the environment, its file, or the sandbox's file in the data directory. */
function keySource(config: Config): { mnemonic: string | undefined; file: string | undefined } {
  const { mnemonic, mnemonicFile } = config.custody;
  const sandboxFile = config.mode === "sandbox" ? join(config.dataDir, "master-mnemonic") : undefined;
  return { mnemonic, file: mnemonicFile ?? (mnemonic ? undefined : sandboxFile) };
}

/** The master key: where it comes from, that it reads as a mnemonic, and that only its owner can read its file. */
export function keyFileCheck(config: Config): Check {
  const { mnemonic, file } = keySource(config);
  if (file && !existsSync(file)) {
    return config.mode === "live" ? fail("key file", `AGENTWALLET_MASTER_MNEMONIC_FILE ${file} does not exist`, "run `agentwallet init`, which writes it, or restore it from its backup (docs/deploy.md, \"Keys\")") : ok("key file", `sandbox: ${file} is written at the first start`);
  }
  try {
    loadMasterMnemonic({ mnemonic, file });
  } catch (err) {
    return fail("key file", (err as Error).message, "restore the mnemonic from its backup; a different one derives different wallets");
  }
  if (!file) return warn("key file", "the master mnemonic is in the environment (AGENTWALLET_MASTER_MNEMONIC)", "keep it in a file readable by the service's user only and set AGENTWALLET_MASTER_MNEMONIC_FILE: the environment shows in process listings and crash reports");
  const mode = statSync(file).mode & 0o777;
  if (mode & NOT_OWNER) return fail("key file", `${file} has mode ${octal(mode)}: others can read the master key`, `chmod 600 ${file}`);
  return ok("key file", `${file} (mode ${octal(mode)})`);
}

/** The key file's check, and the key against the ledger (masterKeyCheck.ts, the check a live start makes too). */
export function keyDerivesWallets(config: Config, keyFile: Check, recorded: RecordedWallet | undefined): Check {
  const source = keySource(config);
  // A sandbox's key is written at its first start: until then there are no words to judge.
  if (keyFile.status === "fail" || (source.file && !existsSync(source.file))) return keyFile;
  const mnemonic = loadMasterMnemonic(source);
  const verdict = judgeMasterKey(createHdCustody(mnemonic), recorded, isBip39Phrase(mnemonic));
  if (verdict.kind === "mismatch") return fail("key file", describeMasterKeyMismatch(verdict.mismatch), MASTER_KEY_MISMATCH_FIX);
  const derives = verdict.recorded ? `${keyFile.detail}; derives project ${verdict.recorded.projectId}'s wallet as recorded` : keyFile.detail;
  if (verdict.kind === "ok") return { ...keyFile, detail: derives };
  // As a live start judges them (masterKeyCheck.ts); a sandbox's start does not judge its words.
  if (verdict.recorded) return warn("key file", `${derives}, but the master mnemonic ${NOT_BIP39_PHRASE}`, NOT_BIP39_KEPT);
  return config.mode === "live" ? fail("key file", `the master mnemonic ${NOT_BIP39_PHRASE}`, NOT_BIP39_FIX) : keyFile;
}

/** The SQLite files and the data directory, which hold balances and sealed secrets: their owner's only. */
export function dataFilesCheck(config: Config): Check {
  if (config.databaseUrl) return filesIn(config.dataDir, "secrets");
  const open = [config.sqlitePath, `${config.sqlitePath}-wal`, `${config.sqlitePath}-shm`].filter((f) => existsSync(f) && statSync(f).mode & NOT_OWNER);
  if (open.length) return fail("sqlite file", `${open.map((f) => `${f} (mode ${octal(statSync(f).mode & 0o777)})`).join(", ")} readable by others`, `chmod 600 ${open.join(" ")}`);
  const dirs = filesIn(config.dataDir, "sqlite file");
  return dirs.status === "ok" && existsSync(config.sqlitePath) ? ok("sqlite file", `${config.sqlitePath} and ${config.dataDir}: owner only`) : dirs;
}

function filesIn(dir: string, name: string): Check {
  if (!existsSync(dir)) return ok(name, `no data directory (${dir})`);
  const dirMode = statSync(dir).mode & 0o777;
  const open = readdirSync(dir).map((f) => join(dir, f)).filter((f) => statSync(f).isFile() && statSync(f).mode & NOT_OWNER);
  if (open.length) return fail(name, `${open.join(", ")} readable by others`, `chmod 600 ${open.join(" ")}`);
  if (dirMode & 0o007) return warn(name, `${dir} has mode ${octal(dirMode)}`, `chmod 700 ${dir}`);
  return ok(name, `${dir}: owner only`);
}

export async function redisCheck(config: Config): Promise<Check | undefined> {
  if (!config.redisUrl) return undefined;
  const redis = new Redis(config.redisUrl, { lazyConnect: true, connectTimeout: REDIS_TIMEOUT_MS, maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => null });
  redis.on("error", () => undefined);
  try {
    await redis.connect();
    const pong = await redis.ping();
    return ok("redis", `REDIS_URL answers (${pong})`);
  } catch (err) {
    return fail("redis", `REDIS_URL does not answer: ${(err as Error).message}`, "check REDIS_URL and that Redis runs; replicas share their rate limits through it");
  } finally {
    redis.disconnect();
  }
}

export async function bridgeChecks(config: Config): Promise<Check[]> {
  const b = config.fiat.bridge;
  if (config.mode !== "live") return [];
  if (!b) return [warn("bridge", "BRIDGE_API_KEY and BRIDGE_CUSTOMER_ID are not set: bank payments answer 503", "set them to pay out to banks (docs/deploy.md, \"Bridge\")")];
  const read = await readBridgeCustomer(b);
  const customer = read.ok
    ? ok("bridge", `customer ${b.customerId} read from ${b.baseUrl}${read.status ? ` (${read.status})` : ""}`)
    : fail("bridge", `reading customer ${b.customerId} from ${b.baseUrl} failed: ${read.detail}`, read.httpStatus === 401 || read.httpStatus === 403 ? "BRIDGE_API_KEY is refused: issue a new key in Bridge's dashboard" : read.httpStatus === 404 ? "BRIDGE_CUSTOMER_ID names no customer of this key" : "check BRIDGE_BASE_URL and this host's access to it");
  return [customer, webhookKeyCheck(b.webhookPublicKey)];
}

function webhookKeyCheck(pem: string | undefined): Check {
  const fix = "register the webhook (docs/deploy.md, \"Bridge\") and set BRIDGE_WEBHOOK_PUBLIC_KEY to the PEM public key Bridge shows for it";
  if (!pem) return warn("bridge webhook", "BRIDGE_WEBHOOK_PUBLIC_KEY is not set: Bridge's webhooks are refused and payouts are followed by polling only", fix);
  try {
    createPublicKey(pem);
    return ok("bridge webhook", "BRIDGE_WEBHOOK_PUBLIC_KEY parses");
  } catch (err) {
    return fail("bridge webhook", `BRIDGE_WEBHOOK_PUBLIC_KEY does not parse as a PEM public key: ${(err as Error).message}`, fix);
  }
}

const octal = (mode: number) => `0${mode.toString(8)}`;
