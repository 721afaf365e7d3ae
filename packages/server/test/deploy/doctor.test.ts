/**
 * `agentwallet doctor` against the real local chain (Circle's FiatTokenV2_2 as USDC) and real databases: it passes on a live configuration
 * made by `agentwallet init`, and fails with the right line for each thing an operator gets wrong.
 */
import { chmodSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type BridgeStandIn, type DevChain, MULTICALL3_ADDRESS, startBridgeStandIn, startDevChain } from "@agentwallet/devchain";
import { createTestClient, http } from "viem";
import { english, generateMnemonic, generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createHdCustody, loadMasterMnemonic } from "../../src/chain/custody.ts";
import { openDb } from "../../src/ledger/db.ts";
import { migrateToLatest } from "../../src/ledger/migrations.ts";
import type { Check } from "../../src/services/doctor/check.ts";
import { CLOCK_SKEW_MAX_S, HEAD_AGE_FAIL_S, HEAD_AGE_WARN_S } from "../../src/services/doctor/chainChecks.ts";
import { relayerRunway } from "../../src/services/relayerRunway.ts";
import { loadConfig } from "../../src/config.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { checksumBroken } from "../support/mnemonic.ts";
import { usdcPayment } from "../support/holds.ts";
import { dialects, type TestDialect } from "../support/db.ts";
import { deploymentPlaces, runCommand as exec } from "../support/deployment.ts";

type Report = { ok: boolean; checks: Check[] };

let dev: DevChain;
let bridge: BridgeStandIn;
let anvil: ReturnType<typeof createTestClient>;
const places = deploymentPlaces("aw-doctor-");

beforeAll(async () => {
  // Circle's own FiatTokenV2_2 behind its proxy, at Base's USDC address: doctor must know the real contract.
  dev = await startDevChain({ usdc: "circle" });
  anvil = createTestClient({ mode: "anvil", transport: http(dev.rpcUrl) });
  bridge = await startBridgeStandIn({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress });
}, 60_000);
afterAll(async () => {
  await places.removeAll();
  await bridge?.stop();
  await dev?.stop();
});

/** `doctor --json` after a fresh block, so the head is as recent as on a live chain. */
async function doctor(env: NodeJS.ProcessEnv): Promise<{ code: number; report: Report }> {
  await anvil.mine({ blocks: 1 });
  const r = await exec(["doctor", "--json"], env);
  return { code: r.code, report: JSON.parse(r.stdout) as Report };
}

function line(report: Report, name: string): Check {
  const c = report.checks.find((x) => x.name === name);
  if (!c) throw new Error(`no check "${name}" in ${JSON.stringify(report.checks.map((x) => x.name))}`);
  return c;
}

/** Fails with exactly this line among the fails, and exit 1. */
function expectFail(r: { code: number; report: Report }, name: string, detail: RegExp): Check {
  expect(r.code).toBe(1);
  expect(r.report.ok).toBe(false);
  const c = line(r.report, name);
  expect(c.status, JSON.stringify(c)).toBe("fail");
  expect(c.detail).toMatch(detail);
  expect(c.fix).toBeTruthy();
  return c;
}

describe.each(dialects)("agentwallet doctor on %s", (dialect: TestDialect) => {
  /** A new deployment's environment: its own data directory and database, live settings on the local chain. */
  async function deployment(): Promise<NodeJS.ProcessEnv> {
    const { dir, databaseUrl } = await places.create(dialect);
    return {
      DATABASE_URL: databaseUrl,
      AGENTWALLET_DATA_DIR: join(dir, "data"),
      BASE_RPC_URL: dev.rpcUrl,
      USDC_ADDRESS: dev.usdcAddress,
      AGENTWALLET_MASTER_MNEMONIC: "",
      AGENTWALLET_MASTER_MNEMONIC_FILE: join(dir, "keys", "master-mnemonic"),
      RELAYER_PRIVATE_KEY: dev.accounts.relayer.privateKey,
      TREASURY_ADDRESS: dev.accounts.treasury.address,
      PUBLIC_BASE_URL: "https://wallet.example.com",
      REDIS_URL: "redis://127.0.0.1:6379",
      RPC_TIMEOUT_MS: "3000",
      RPC_RETRIES: "0",
    };
  }

  async function initialized(): Promise<NodeJS.ProcessEnv> {
    const env = await deployment();
    const r = await exec(["init"], env);
    expect(r.code, r.stderr).toBe(0);
    return env;
  }

  test("passes on a live configuration made by init, one line per check", async () => {
    const env = await initialized();
    const r = await doctor(env);
    expect(r.report.checks.filter((c) => c.status === "fail")).toEqual([]);
    expect(r.code).toBe(0);
    expect(r.report.checks.map((c) => c.name)).toEqual(["database", "migrations", "mode", "ledger", "rpc", "head", "usdc", "multicall3", "relayer", "treasury", "public url", "key file", dialect === "sqlite" ? "sqlite file" : "secrets", "redis", "bridge"]);
    expect(line(r.report, "usdc").detail).toMatch(/"USD Coin" version 2, 6 decimals/);
    expect(line(r.report, "mode").detail).toBe("live deployment on chain 8453, as configured");
    // The human form: one line per check, the fix under a warning.
    const human = await exec(["doctor"], env);
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^ok {4}database /m);
    expect(human.stdout).toMatch(/^warn {2}bridge .*\n +fix: /m);
    expect(human.stdout).toMatch(/No check failed, 1 warning\(s\)\.\n$/);
  });

  test("error: the RPC serves another chain id", async () => {
    const env = await initialized();
    await anvil.request({ method: "anvil_setChainId" as never, params: [84532] as never });
    try {
      expectFail(await doctor(env), "rpc", /serves chain 84532, this deployment is configured for chain 8453/);
    } finally {
      await anvil.request({ method: "anvil_setChainId" as never, params: [8453] as never });
    }
  });

  test("error: the contract at USDC_ADDRESS is not USDC", async () => {
    const env = await initialized();
    expectFail(await doctor({ ...env, USDC_ADDRESS: MULTICALL3_ADDRESS }), "usdc", new RegExp(`contract at USDC_ADDRESS ${MULTICALL3_ADDRESS} does not answer as USDC`));
  });

  test("error: the relayer has no ETH", async () => {
    const env = await initialized();
    const c = expectFail(await doctor({ ...env, RELAYER_PRIVATE_KEY: generatePrivateKey() }), "relayer", /holds 0 ETH: not enough gas for one payment/);
    expect(c.fix).toMatch(/send ETH on Base to the relayer 0x/);
  });

  /** Runs `fn` with the chain's clock `offsetS` seconds from this host's (anvil's evm_setTime), then puts it back. */
  async function withChainClock<T>(offsetS: number, fn: () => Promise<T>): Promise<T> {
    await anvil.request({ method: "evm_setTime" as never, params: [Math.floor(Date.now() / 1000) + offsetS] as never });
    try {
      return await fn();
    } finally {
      await anvil.request({ method: "evm_setTime" as never, params: [Math.floor(Date.now() / 1000)] as never });
      await anvil.mine({ blocks: 1 });
    }
  }

  test("behavior: a head a few minutes old is a warning, one older than ten minutes a failure, and a head ahead of this host's clock is skew", async () => {
    const env = await initialized();
    const lagging = await withChainClock(-(HEAD_AGE_WARN_S + 60), () => doctor(env));
    expect(line(lagging.report, "head")).toMatchObject({ status: "warn", detail: expect.stringMatching(/^head block \d+ at .*, \d+ s old$/), fix: expect.stringMatching(/node lags the chain/) });
    expect(lagging.code).toBe(0);
    expectFail(await withChainClock(-(HEAD_AGE_FAIL_S + 60), () => doctor(env)), "head", /, \d+ s old$/);
    const ahead = await withChainClock(CLOCK_SKEW_MAX_S + 90, () => doctor(env));
    expect(line(ahead.report, "head")).toMatchObject({ status: "warn", detail: expect.stringMatching(/\d+ s ahead of this host's clock$/), fix: expect.stringMatching(/run NTP/) });
    expect(line((await doctor(env)).report, "head").status).toBe("ok");
  });

  test("behavior: a relayer whose ETH lasts less than a week at the last day's rate of payments is a warning", async () => {
    const env = await initialized();
    // One relayed payment in the deployment's own ledger in the last day.
    const { ledger, opened } = await openLedger(loadConfig(env, {}, { signs: false }));
    try {
      const project = await ledger.projects.create({ name: "p", plan: "free" });
      // Funded as a deposit is, so the ledger still verifies (the wallet address is never read here).
      const deposit = { chain: "base", txHash: `0x${"ab".repeat(32)}`, logIndex: 0 };
      await ledger.deposits.recordSeen({ ...deposit, projectId: project.id, toAddress: dev.accounts.treasury.address, fromAddress: dev.accounts.treasury.address, amountMicros: 1_000_000, blockNumber: 1, blockHash: `0x${"cd".repeat(32)}` });
      await ledger.deposits.credit(deposit);
      expect((await ledger.payments.hold(usdcPayment(project.id, 1_000, 20))).kind).toBe("held");
    } finally {
      await opened.close();
    }
    // A relayer with gas for about three payments: three days at one a day.
    const gasPriceWei = BigInt(await anvil.request({ method: "eth_gasPrice" as never }));
    const { weiPerPayment } = relayerRunway({ balanceWei: 0n, gasPriceWei, paymentsLastDay: 1 });
    const relayer = generatePrivateKey();
    await anvil.setBalance({ address: privateKeyToAccount(relayer).address, value: 3n * weiPerPayment });
    const r = await doctor({ ...env, RELAYER_PRIVATE_KEY: relayer });
    expect(line(r.report, "relayer")).toMatchObject({ status: "warn", detail: expect.stringMatching(/: about \d+\.\d days at the last day's 1 payment\(s\)$/), fix: expect.stringMatching(/send ETH on Base to the relayer/) });
    expect(r.report.checks.filter((c) => c.status === "fail")).toEqual([]);
  });

  test("error: the database is not migrated, or holds no ledger at all", async () => {
    const env = await deployment();
    expectFail(await doctor(env), "database", /holds no Agent Wallet ledger/);
    // Part of the way: the migrations up to 0018 only.
    const opened = dialect === "postgres" ? openDb({ kind: "postgres", url: env.DATABASE_URL! }) : openDb({ kind: "sqlite", path: join(env.AGENTWALLET_DATA_DIR!, "agentwallet.db") });
    await migrateToLatest(opened.db, opened.dialect, "0018_idempotency_keys");
    await opened.close();
    expectFail(await doctor(env), "migrations", /migration\(s\) not applied: 0019_bank_returns_watch/);
  });

  test("error: a test database under live settings", async () => {
    const env = await deployment();
    const sandbox = await exec(["migrate"], { ...env, BASE_RPC_URL: "" });
    expect(sandbox.code, sandbox.stderr).toBe(0);
    expectFail(await doctor(env), "mode", /holds a test deployment .* and this configuration is live/);
  });

  test("error: the key file is readable by others", async () => {
    const env = await initialized();
    chmodSync(env.AGENTWALLET_MASTER_MNEMONIC_FILE!, 0o644);
    expectFail(await doctor(env), "key file", /mode 0644: others can read the master key/);
  });

  test("error: the key file holds other words than those the project wallets were derived from (a wrong restore)", async () => {
    const env = await initialized();
    const file = env.AGENTWALLET_MASTER_MNEMONIC_FILE!;
    const { ledger, opened } = await openLedger(loadConfig(env, {}, { signs: false }));
    let wallet: string;
    try {
      // The project's deposit address, recorded as its first GET /v1/stablecoin/address records it.
      const project = await ledger.projects.create({ name: "p", plan: "free" });
      wallet = await ledger.projects.setWalletAddress(project.id, createHdCustody(loadMasterMnemonic({ file })).addressOf(project.wallet_index));
    } finally {
      await opened.close();
    }
    const right = await doctor(env);
    expect(line(right.report, "key file")).toMatchObject({ status: "ok", detail: expect.stringMatching(/derives project prj_\w+'s wallet as recorded/) });

    // The backup restored wrong: a valid mnemonic, mode 0600, but not this deployment's.
    writeFileSync(file, `${generateMnemonic(english, 256)}\n`, { mode: 0o600 });
    const c = expectFail(await doctor(env), "key file", new RegExp(`derives 0x[0-9a-fA-F]{40} for project prj_\\w+ \\(wallet index 0\\), whose wallet is ${wallet}: not this deployment's key`));
    expect(c.fix).toMatch(/restore the words this deployment was set up with/);
  });

  test("behavior: a sandbox before its first start has no key file yet, and doctor says so rather than failing to read it", async () => {
    const { AGENTWALLET_MASTER_MNEMONIC: _words, AGENTWALLET_MASTER_MNEMONIC_FILE: _file, ...live } = await deployment();
    const env = { ...live, BASE_RPC_URL: "" };
    const r = await exec(["doctor", "--json"], env);
    expect(r.stderr).not.toMatch(/ENOENT/);
    expect(line((JSON.parse(r.stdout) as Report), "key file")).toMatchObject({ status: "ok", detail: expect.stringMatching(/sandbox: .*master-mnemonic is written at the first start/) });
  });

  test("error, then warning: words that are not a BIP-39 phrase fail while no wallet is recorded, and warn once one derived from them is", async () => {
    const env = await initialized();
    const file = env.AGENTWALLET_MASTER_MNEMONIC_FILE!;
    const typo = checksumBroken(generateMnemonic(english, 256).split(" ")).join(" ");
    writeFileSync(file, `${typo}\n`, { mode: 0o600 });
    expect(expectFail(await doctor(env), "key file", /the master mnemonic is not a BIP-39 phrase/).fix).toMatch(/check each word against the backup/);
    const { ledger, opened } = await openLedger(loadConfig(env, {}, { signs: false }));
    try {
      const project = await ledger.projects.create({ name: "p", plan: "free" });
      await ledger.projects.setWalletAddress(project.id, createHdCustody(typo).addressOf(project.wallet_index));
    } finally {
      await opened.close();
    }
    expect(line((await doctor(env)).report, "key file")).toMatchObject({ status: "warn", detail: expect.stringMatching(/derives project prj_\w+'s wallet as recorded, but the master mnemonic is not a BIP-39 phrase/), fix: expect.stringMatching(/keep them, and their backup, exactly as they are/) });
  });

  test("error: PUBLIC_BASE_URL is http in live mode", async () => {
    const env = await initialized();
    expectFail(await doctor({ ...env, PUBLIC_BASE_URL: "http://wallet.example.com" }), "public url", /is not https/);
  });

  test.runIf(dialect === "sqlite")("behavior: Bridge's key is tried on the customer, and the webhook key must parse", async () => {
    const env = await initialized();
    const withBridge = { ...env, BRIDGE_BASE_URL: bridge.url, BRIDGE_API_KEY: bridge.apiKey, BRIDGE_CUSTOMER_ID: bridge.customerId, BRIDGE_WEBHOOK_PUBLIC_KEY: bridge.webhookPublicKey.replace(/\n/g, "\\n"), BRIDGE_RETRIES: "0" };
    const good = await doctor(withBridge);
    expect(line(good.report, "bridge")).toMatchObject({ status: "ok", detail: expect.stringMatching(/customer .* read from .*\(active\)/) });
    expect(line(good.report, "bridge webhook")).toMatchObject({ status: "ok" });
    expect(good.code).toBe(0);
    expect(expectFail(await doctor({ ...withBridge, BRIDGE_API_KEY: "sk-test-revoked" }), "bridge", /failed: Missing or invalid Api-Key header/).fix).toMatch(/BRIDGE_API_KEY is refused/);
    expectFail(await doctor({ ...withBridge, BRIDGE_CUSTOMER_ID: "cust_nobody" }), "bridge", /Customer cust_nobody not found/);
    expectFail(await doctor({ ...withBridge, BRIDGE_WEBHOOK_PUBLIC_KEY: "-----BEGIN PUBLIC KEY-----\\nnot a key\\n-----END PUBLIC KEY-----" }), "bridge webhook", /does not parse as a PEM public key/);
  });

  test.runIf(dialect === "sqlite")("error: REDIS_URL does not answer", async () => {
    const env = await initialized();
    expectFail(await doctor({ ...env, REDIS_URL: "redis://127.0.0.1:1" }), "redis", /REDIS_URL does not answer/);
  });

  test.runIf(dialect === "sqlite")("error: the SQLite file is readable by others", async () => {
    const env = await initialized();
    chmodSync(join(env.AGENTWALLET_DATA_DIR!, "agentwallet.db"), 0o644);
    expectFail(await doctor(env), "sqlite file", /agentwallet\.db \(mode 0644\) readable by others/);
  });
});
