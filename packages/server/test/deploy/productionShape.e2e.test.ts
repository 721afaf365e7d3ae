/**
 * The production shape, stood up and paid through: nginx (Debian's, with deploy/nginx/agentwallet.conf)
 * terminating TLS with a generated certificate in front of two `agentwallet serve` processes on one PostgreSQL
 * database with Redis, set up by `agentwallet init` and passing `agentwallet doctor`, on the local chain standing
 * in for Base. Through it: a deposit, a payment of each rail (an x402 merchant and a webhook receiver inside the
 * "private network", named by PRIVATE_TARGETS and reached over TLS; the Bridge stand-in for the bank), a
 * webhook delivered over https, the console's Secure cookie, and the client's address taken from the proxy
 * only. One server is killed with -9 mid-stream: the other carries on, every payment ends final and
 * reconcile is clean. Then the backup drill: pg_dump, restore into a new database, a server on it, and
 * verify-ledger, reconcile and the balance all agree.
 */
import { execFileSync, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BridgeStandIn, type DevChain, type Facilitator, type Merchant, startBridgeStandIn, startDevChain, startFacilitator, startMerchantV2 } from "@agentwallet/devchain";
import pg from "pg";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { runCommand } from "../support/deployment.ts";
import { freePort } from "../support/net.ts";
import { requireNginx, shippedNginxSite, startNginx } from "../support/nginx.ts";
import { poll } from "../support/poll.ts";
import { type ServerProcess, spawnServer } from "../support/spawnServer.ts";
import { CLIENT_ADDRESS, httpsClient, selfSignedCertificate, stopProcess } from "../support/tlsProxy.ts";
import { startReceiver } from "../support/webhookReceiver.ts";

const pgBase = process.env.TEST_DATABASE_URL;
const MERCHANT_PAY_TO = "0x00000000000000000000000000000000000c0de1" as Address;
const USDC_TO = "0x00000000000000000000000000000000000c0de2" as Address;
const BANK = { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" };
/** How many USDC payments stream through while one server is killed. */
const STREAM = 12;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.runIf(pgBase)("the production shape: nginx with TLS, two servers, PostgreSQL, Redis", () => {
  let dir: string;
  let dev: DevChain;
  let bridge: BridgeStandIn;
  let facilitator: Facilitator;
  let merchant: Merchant;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let nginx: ChildProcess | undefined;
  const servers: ServerProcess[] = [];
  const databases: string[] = [];
  const dbUrl = (name: string) => {
    const u = new URL(pgBase!);
    u.pathname = `/${name}`;
    return u.toString();
  };
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: pgBase });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  const newDatabase = async (name: string) => {
    await admin(`create database ${name}`);
    databases.push(name);
    return dbUrl(name);
  };

  beforeAll(async () => {
    requireNginx();
    dir = mkdtempSync(join(tmpdir(), "aw-shape-"));
    dev = await startDevChain({ usdcAddress: BASE_USDC_ADDRESS });
    bridge = await startBridgeStandIn({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, stepMs: 100, tickMs: 100 });
    facilitator = await startFacilitator({ rpcUrl: dev.rpcUrl, privateKey: dev.accounts.facilitator.privateKey });
    merchant = await startMerchantV2({ facilitatorUrl: facilitator.url, payTo: MERCHANT_PAY_TO, usdcAddress: dev.usdcAddress, priceMicros: 10_000n });
    receiver = await startReceiver();
  }, 120_000);

  afterAll(async () => {
    for (const s of servers) await s.stop().catch(() => {});
    await stopProcess(nginx);
    await receiver?.close();
    await merchant?.stop();
    await facilitator?.stop();
    await bridge?.stop();
    await dev?.stop();
    for (const name of databases) await admin(`drop database if exists ${name} with (force)`).catch(() => {});
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test("behavior: deployed by init, checked by doctor, paid through on every rail, survives a kill -9, restores from pg_dump", async () => {
    // A certificate for the proxy, trusted by the servers (NODE_EXTRA_CA_CERTS) and by this client.
    const { cert, key } = selfSignedCertificate(dir);
    const [proxyPort, merchantTls, receiverTls, portA, portB] = await Promise.all([freePort(), freePort(), freePort(), freePort(), freePort()]);
    const base = `https://127.0.0.1:${proxyPort}`;

    // The deployment's settings, as docs/deploy.md has the operator write them.
    const env: NodeJS.ProcessEnv = {
      DATABASE_URL: await newDatabase(`aw_shape_${process.pid}`),
      AGENTWALLET_DATA_DIR: join(dir, "data"),
      AGENTWALLET_MASTER_MNEMONIC: "",
      AGENTWALLET_MASTER_MNEMONIC_FILE: join(dir, "keys", "master-mnemonic"),
      BASE_RPC_URL: dev.rpcUrl,
      USDC_ADDRESS: dev.usdcAddress,
      RELAYER_PRIVATE_KEY: dev.accounts.relayer.privateKey,
      TREASURY_ADDRESS: dev.accounts.treasury.address,
      PUBLIC_BASE_URL: base,
      TRUST_PROXY: "127.0.0.1",
      REDIS_URL: "redis://127.0.0.1:6379/5",
      PRIVATE_TARGETS: `127.0.0.1:${merchantTls},127.0.0.1:${receiverTls}`,
      NODE_EXTRA_CA_CERTS: cert,
      BRIDGE_API_KEY: bridge.apiKey,
      BRIDGE_CUSTOMER_ID: bridge.customerId,
      BRIDGE_BASE_URL: bridge.url,
      BRIDGE_WEBHOOK_PUBLIC_KEY: bridge.webhookPublicKey.replace(/\n/g, "\\n"),
      BRIDGE_POLL_INTERVAL_MS: "200",
      // The local chain mines a block per transaction: fewer confirmations and faster loops than Base needs.
      DEPOSIT_CONFIRMATIONS: "1",
      PAYMENT_CONFIRMATIONS: "1",
      WATCHER_INTERVAL_MS: "100",
      WORKER_INTERVAL_MS: "100",
      PAYMENT_REQUEST_LEASE_MS: "3000",
      RATE_LIMIT_PER_MINUTE: "100000",
      LOG_LEVEL: "warn",
    };

    // init, then doctor: no check fails.
    const init = await runCommand(["init", "--json"], env);
    expect(init.code, init.stderr).toBe(0);
    const credential = JSON.parse(init.stdout).admin_credential.credential as string;
    await fetch(dev.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "evm_mine", params: [] }) });
    const doctor = await runCommand(["doctor", "--json"], env);
    const checks = (JSON.parse(doctor.stdout) as { checks: { name: string; status: string; detail: string }[] }).checks;
    expect(checks.filter((c) => c.status === "fail"), doctor.stdout).toEqual([]);
    expect(doctor.code).toBe(0);
    expect(checks.find((c) => c.name === "redis")?.status).toBe("ok");
    expect(checks.find((c) => c.name === "bridge")?.status).toBe("ok");

    // The proxy: the shipped file with this machine's ports and certificate, plus TLS in front of the merchant and
    // the webhook receiver (services inside the operator's network).
    const shipped = shippedNginxSite({ listenPort: proxyPort, upstreamPorts: [portA, portB], cert, key });
    const tlsTo = (port: number, target: string) =>
      `server { listen 127.0.0.1:${port} ssl; ssl_certificate ${cert}; ssl_certificate_key ${key}; location / { proxy_pass ${target}; proxy_set_header Host $host; } }`;
    nginx = await startNginx({ dir, sites: [shipped, `  ${tlsTo(merchantTls, merchant.url)}`, `  ${tlsTo(receiverTls, receiver.url)}`], listenPorts: [proxyPort, merchantTls, receiverTls] });

    // Two replicas on one database.
    servers.push(...(await Promise.all([spawnServer(env, portA, 120_000), spawnServer(env, portB, 120_000)])));

    // The client: trusts the certificate, and comes from 127.0.0.2 so its address is not the proxy's.
    const { call, signInOperator } = httpsClient(base, cert);

    // The first project and token, as the guide's step 9 makes them.
    const project = JSON.parse((await runCommand(["projects", "create", "--name", "Research agent", "--json"], env)).stdout).id as string;
    const minted = await runCommand(["tokens", "create", "--project", project, "--permissions", "read,pay,x402", "--json"], env);
    const token = JSON.parse(minted.stdout).token as string;
    expect(token).toMatch(/^aw_live_/);

    // A webhook endpoint over https, registered through the proxy with the admin credential; the audit log
    // records the client's address as the proxy saw it, not the X-Forwarded-For the client made up.
    const hook = await call(`/v1/admin/projects/${project}/webhooks`, { auth: credential, body: { url: `https://127.0.0.1:${receiverTls}/hooks` }, headers: { "x-forwarded-for": "6.6.6.6" } });
    expect(hook.status, JSON.stringify(hook.json)).toBe(201);
    const audit = await call("/v1/admin/audit", { auth: credential });
    expect(audit.json.data.find((e: any) => e.action === "webhook.created").actor.ip).toBe(CLIENT_ADDRESS);

    // The console over https: its session cookie is Secure.
    const signIn = await signInOperator(credential);
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get("set-cookie")).toMatch(/; Secure/);

    // A deposit.
    const wallet = (await call("/v1/stablecoin/address", { auth: token })).json.address as Address;
    await dev.mint(wallet, 100_000_000n);
    await poll("the deposit credited", async () => ((await call("/v1/balance", { auth: token })).json.available > 0 ? true : undefined));

    // One payment per rail.
    const paid = async (body: Record<string, unknown>) => {
      const r = await call("/v1/pay", { auth: token, body });
      expect(r.status, `${JSON.stringify(r.json)}\n${servers.map((x) => x.output().slice(-3_000)).join("\n---\n")}`).toBeLessThan(300);
      return r.json.id as string;
    };
    const final = (id: string) => poll(`payment ${id} final`, async () => {
      const t = await call(`/v1/transactions/${id}`, { auth: token });
      return ["completed", "failed", "reversed"].includes(t.json?.status) ? t.json : undefined;
    }, 90_000);
    const x402 = await paid({ recipient: `https://127.0.0.1:${merchantTls}/paid`, max_amount_usdc: 20_000 });
    const usdc = await paid({ recipient: USDC_TO, amount_usd: 1.5, idempotency_key: "shape-usdc" });
    const bank = await paid({ recipient: BANK, amount_usd: 7, idempotency_key: "shape-bank" });
    for (const id of [x402, usdc, bank]) expect((await final(id)).status).toBe("completed");
    await poll("webhooks delivered over https", async () => (receiver.received.filter((r) => r.type === "payment.completed").length >= 3 ? true : undefined));

    // A stream of payments; one server killed with -9 part-way. A request the dead server may have received is
    // answered 502 by the proxy, and the client sends it again with its key, as an agent would.
    const stream = Array.from({ length: STREAM }, async (_, i) => {
      await sleep(i * 150);
      for (let attempt = 0; ; attempt++) {
        const r = await call("/v1/pay", { auth: token, body: { recipient: USDC_TO, amount_usd: 0.25, idempotency_key: `shape-stream-${i}` } }).catch((err: Error) => ({ status: 0, json: { detail: err.message } }) as const);
        if (r.status > 0 && r.status < 300) return r.json.id as string;
        if (attempt >= 20) throw new Error(`payment ${i}: ${r.status} ${JSON.stringify(r.json)}`);
        await sleep(250);
      }
    });
    await sleep(STREAM * 60);
    await servers[0]!.kill9();
    const ids = await Promise.all(stream);
    expect(new Set(ids).size).toBe(STREAM);
    for (const id of ids) expect((await final(id)).status).toBe("completed");
    expect((await call("/v1/transactions?limit=200", { auth: token })).json.transactions.filter((t: any) => t.type !== "usdc_fund" && t.type !== "platform_fee")).toHaveLength(3 + STREAM);

    const reconcile = await runCommand(["reconcile", "--json"], env);
    expect(reconcile.code, reconcile.stdout.slice(0, 2_000)).toBe(0);
    const balance = (await call("/v1/balance", { auth: token })).json;

    // The backup drill: pg_dump of the live database, restored into a new one, a server on it.
    const dump = join(dir, "agentwallet.dump");
    execFileSync("pg_dump", ["--format=custom", `--file=${dump}`, env.DATABASE_URL!], { stdio: "pipe" });
    for (const s of servers.splice(0)) await s.stop();
    const restoredUrl = await newDatabase(`aw_shape_${process.pid}_restored`);
    execFileSync("pg_restore", ["--no-owner", `--dbname=${restoredUrl}`, dump], { stdio: "pipe" });
    const restored = { ...env, DATABASE_URL: restoredUrl };
    const verify = await runCommand(["verify-ledger", "--json"], restored);
    expect(verify.code, verify.stdout.slice(0, 2_000)).toBe(0);
    const again = await runCommand(["reconcile", "--json"], restored);
    expect(again.code, again.stdout.slice(0, 2_000)).toBe(0);
    servers.push(await spawnServer(restored, undefined, 120_000));
    const after = await fetch(`${servers[0]!.baseUrl}/v1/balance`, { headers: { authorization: `Bearer ${token}` } });
    expect(await after.json()).toEqual(balance);
  }, 900_000);
});
