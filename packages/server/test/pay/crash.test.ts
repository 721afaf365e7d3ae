import { startDevChain, type DevChain } from "@agentwallet/devchain";
import { type Address, parseAbiItem } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createChainClient } from "../../src/chain/chainClient.ts";
import { createHdCustody } from "../../src/chain/custody.ts";
import type { Ledger } from "../../src/ledger/store.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createToken } from "../../src/services/tokens.ts";
import { TEST_MNEMONIC } from "../support/context.ts";
import { freePort, liveEnv, spawnServer, type ServerProcess } from "../support/spawnServer.ts";
import { openPayments, paymentRows, relayerTxs } from "../../src/ledger/testing.ts";
import { createTestLedger, type TestLedger } from "../support/db.ts";

const recipient: Address = "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65";
const PAYMENTS = 40;
const KILLS = 3;

describe("crash: kill -9 at random moments during a stream of payments", () => {
  let dev: DevChain;
  let db: TestLedger;
  let ledger: Ledger;
  let dir: string;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    dev = await startDevChain();
    db = await createTestLedger("sqlite", { sqliteFile: "agentwallet.db", dirPrefix: "aw-crash-" });
    ledger = db.ledger;
    dir = db.dir!;
  });
  afterAll(async () => {
    await server?.stop();
    await dev?.stop();
    await db?.drop();
  });

  test("after restarts every payment is final, none is sent twice, the ledger verifies and reconciles with the chain", async () => {
    const project = await ledger.projects.create({ name: "crashy", plan: "free" });
    const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index);
    await ledger.projects.setWalletAddress(project.id, wallet);
    const token = (await createToken({ ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read", "pay"], mode: "live" })).token;
    const env = liveEnv(dev, { dataDir: dir });
    const port = await freePort();
    server = await spawnServer(env, port);
    await dev.mint(wallet, 1_000_000_000n);
    for (let i = 0; i < 300 && (await ledger.balances.get(project.id))!.available_micros === 0; i++) await new Promise((r) => setTimeout(r, 100));

    // Each payment has a unique amount (so its on-chain transfer is recognisable) and its own key.
    // The client retries a key until it gets an answer, as a careful client does across outages.
    const amountOf = (i: number) => 10_000 + i; // micro-USDC
    const caught = { held: 0, inFlight: 0 };
    const killer = (async () => {
      for (let k = 0; k < KILLS; k++) {
        await new Promise((r) => setTimeout(r, 150 + Math.floor(Math.random() * 450)));
        await server!.kill9();
        // What the crash interrupted: held but not yet signed/broadcast, or broadcast but not final.
        const open = await openPayments(ledger);
        caught.held += open.filter((p) => !p.tx_hash).length;
        caught.inFlight += open.filter((p) => p.tx_hash).length;
        server = await spawnServer(env, port);
      }
    })();
    const answers = new Map<number, { status: number; id?: string }>();
    let retries = 0;
    for (let i = 0; i < PAYMENTS; i++) {
      for (let attempt = 0; attempt < 200; attempt++) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/v1/pay`, {
            method: "POST",
            headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
            body: JSON.stringify({ recipient, amount_usd: amountOf(i) / 1e6, idempotency_key: `crash-${i}` }),
            signal: AbortSignal.timeout(10_000),
          });
          const body = (await res.json()) as { id?: string };
          if (res.status === 409 || res.status >= 500) throw new Error(`retry ${res.status}`);
          answers.set(i, { status: res.status, id: body.id });
          break;
        } catch {
          retries++;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    }
    await killer;
    // Let the workers of the last process finish everything.
    for (let i = 0; i < 600; i++) {
      const open = await openPayments(ledger);
      if (open.length === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }

    expect(answers.size).toBe(PAYMENTS);
    const payments = await paymentRows(ledger, { projectId: project.id });
    expect(payments).toHaveLength(PAYMENTS); // one per key, whatever the retries
    for (const p of payments) expect(["completed", "failed"]).toContain(p.status);

    // On-chain: each completed payment's amount arrived exactly once; failed ones never.
    const client = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 });
    const logs = await client.client.getLogs({ address: dev.usdcAddress, event: parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)"), args: { from: wallet, to: recipient }, fromBlock: 0n, toBlock: "latest" });
    const sent = logs.map((l) => Number(l.args.value)).sort((a, b) => a - b);
    const completed = payments.filter((p) => p.status === "completed").map((p) => p.amount_micros).sort((a, b) => a - b);
    expect(sent).toEqual(completed);
    expect(new Set(sent).size).toBe(sent.length);

    console.log(`crash test: ${KILLS} kills caught ${caught.held} held-unsent and ${caught.inFlight} broadcast-unconfirmed payments; client retries ${retries}; ${completed.length}/${payments.length} completed`);
    expect((await ledger.verify()).problems).toEqual([]);
    const b = (await ledger.balances.get(project.id))!;
    expect(b.held_micros).toBe(0);
    expect(Number(await client.usdcBalance(wallet))).toBe(b.available_micros);
    const relayed = await relayerTxs(ledger);
    expect(new Set(relayed.map((r) => r.nonce)).size).toBe(relayed.length);
    // Four server starts (each allowed 90 s by spawnServer) on two cores shared with the rest of the suite.
  }, 400_000);
});
