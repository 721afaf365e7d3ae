/**
 * A live-mode deployment against Bridge's stand-in: the Base stand-in chain (anvil, chain id 8453, the
 * test USDC at Base's USDC address), the Bridge stand-in on loopback, a real database (SQLite or a
 * PostgreSQL schema), a funded project, and `agentwallet serve` as a child process with BRIDGE_*.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BridgeStandIn, type DevChain, startBridgeStandIn, startDevChain, usdcBalanceOf } from "@agentwallet/devchain";
import { type Address, createPublicClient, http, parseAbiItem } from "viem";
import { createHdCustody } from "../../src/chain/custody.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import type { Payment } from "../../src/domain/payment.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import {  } from "../../src/ledger/payments.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createToken } from "../../src/services/tokens.ts";
import { TEST_MNEMONIC } from "./context.ts";
import { type TestDialect, createTestLedger } from "./db.ts";
import { perFile } from "./perFile.ts";
import { poll } from "./poll.ts";
import { freePort, liveEnv, spawnServer, type ServerProcess } from "./spawnServer.ts";
import { transactionRow } from "../../src/ledger/testing.ts";

export type BridgeLive = {
  dev: DevChain;
  standIn: BridgeStandIn;
  ledger: Ledger;
  projectId: string;
  wallet: Address;
  server: ServerProcess;
  /** POST /v1/pay to bank details; returns the payment row's id. */
  payBank(recipient: { name: string; account_number: string; routing_number: string }, amountUsd: number): Promise<string>;
  payment(id: string): Promise<Payment>;
  /** Waits (bounded) until the payment is in one of `statuses`. */
  until(id: string, statuses: string[], ms?: number): Promise<Payment>;
  /** On-chain USDC transfers from the project wallet to `to`, in micro-USDC. */
  sentTo(to: Address): Promise<bigint[]>;
  usdc(address: Address): Promise<bigint>;
  kill9(): Promise<void>;
  restart(): Promise<void>;
  stop(): Promise<void>;
};

/** `startBridgeLive` for the tests of one file or `describe` block: started before them (within 5 minutes), stopped after. */
export function useBridgeLive(dialect: TestDialect, o: { env?: NodeJS.ProcessEnv; webhooks?: boolean } = {}): BridgeLive {
  return perFile(async () => ({ bridgeLive: await startBridgeLive(dialect, o) }), ({ bridgeLive }) => bridgeLive.stop(), 300_000).bridgeLive;
}

export async function startBridgeLive(dialect: TestDialect, o: { env?: NodeJS.ProcessEnv; webhooks?: boolean } = {}): Promise<BridgeLive> {
  const dev = await startDevChain({ usdcAddress: BASE_USDC_ADDRESS });
  const standIn = await startBridgeStandIn({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, stepMs: 100, tickMs: 100 });
  const db = await createTestLedger(dialect, { sqliteFile: "agentwallet.db", dirPrefix: "aw-bridge-" });
  // The data directory: the SQLite file's, or one of its own beside a PostgreSQL schema.
  const dir = db.dir ?? mkdtempSync(join(tmpdir(), "aw-bridge-"));
  const ledger = db.ledger;
  const project = await ledger.projects.create({ name: "bridge-live", plan: "free" });
  const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index);
  await ledger.projects.setWalletAddress(project.id, wallet);
  const token = (await createToken({ ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read", "pay"], mode: "live" })).token;
  const env: NodeJS.ProcessEnv = {
    ...liveEnv(dev, db.url ? { databaseUrl: db.url, dataDir: dir } : { dataDir: dir }),
    BRIDGE_API_KEY: standIn.apiKey,
    BRIDGE_CUSTOMER_ID: standIn.customerId,
    BRIDGE_BASE_URL: standIn.url,
    BRIDGE_WEBHOOK_PUBLIC_KEY: standIn.webhookPublicKey.replace(/\n/g, "\\n"),
    BRIDGE_POLL_INTERVAL_MS: "200",
    ...o.env,
  };
  const port = await freePort();
  // Up to two minutes to start: these suites spawn the server several times on a shared machine.
  const READY_WITHIN_MS = 120_000;
  let server = await spawnServer(env, port, READY_WITHIN_MS);
  if (o.webhooks !== false) standIn.setWebhookUrl(`${server.baseUrl}/v1/webhooks/bridge`);
  await dev.mint(wallet, 1_000_000_000n);
  await poll("the deposit to be credited", async () => ((await ledger.balances.get(project.id))!.available_micros > 0 ? true : undefined));
  const client = createPublicClient({ transport: http(dev.rpcUrl) });
  const live: BridgeLive = {
    dev,
    standIn,
    ledger,
    projectId: project.id,
    wallet,
    get server() {
      return server;
    },
    async payBank(recipient, amountUsd) {
      const res = await fetch(`${server.baseUrl}/v1/pay`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: JSON.stringify({ recipient, amount_usd: amountUsd }),
      });
      const body = (await res.json()) as { id: string };
      if (res.status !== 201) throw new Error(`pay answered ${res.status}: ${JSON.stringify(body)}`);
      const txn = (await transactionRow(ledger, body.id))!;
      return txn.payment_id!;
    },
    async payment(id) {
      return (await ledger.payments.getPayment(id))!;
    },
    until(id, statuses, ms = 60_000) {
      return poll(`payment ${id} to be ${statuses.join(" or ")}`, async () => {
        const p = await ledger.payments.getPayment(id);
        return p && statuses.includes(p.status) ? p : undefined;
      }, ms);
    },
    async sentTo(to) {
      const logs = await client.getLogs({ address: dev.usdcAddress, event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"), args: { from: wallet, to }, fromBlock: 0n, toBlock: "latest" });
      return logs.map((l) => l.args.value!);
    },
    usdc: (a) => usdcBalanceOf(dev.rpcUrl, dev.usdcAddress, a),
    async kill9() {
      await server.kill9();
    },
    async restart() {
      server = await spawnServer(env, port, READY_WITHIN_MS);
    },
    async stop() {
      await server.stop();
      await standIn.stop();
      await dev.stop();
      await db.drop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return live;
}
