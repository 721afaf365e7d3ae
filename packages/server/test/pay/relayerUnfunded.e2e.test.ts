// The relayer out of ETH, a live deployment's most common outage, on a real chain and a real server
// process: a USDC payment waits (not failed, not lost, not retried into exhaustion), its transaction says
// why and since when, the metric behind the alert reads 1, and the log says it once however often the
// worker tries; once the relayer is funded the payment completes and all of it clears.
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createHdCustody } from "../../src/chain/custody.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { issueToken } from "../../src/services/tokens.ts";
import { TEST_MNEMONIC } from "../support/context.ts";
import { poll } from "../support/poll.ts";
import { type SandboxProcessFixture, startSandboxProcessFixture } from "../support/sandboxProcess.ts";
import { type ServerProcess, spawnServer } from "../support/spawnServer.ts";

const TO = "0x00000000000000000000000000000000000b0b01" as Address;
const UNFUNDED_LOG = "the relayer cannot pay gas";

describe("a relayer with no ETH for gas", () => {
  let f: SandboxProcessFixture;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    f = await startSandboxProcessFixture("relayer-unfunded");
  });
  afterAll(async () => {
    await server?.stop();
    await f?.close();
  });

  test("behavior: payments wait and say why, the alert's metric reads 1, the log says it once; funded, they complete", async () => {
    const { dev, ledger } = f;
    const rpc = async (method: string, params: unknown[]) => {
      const res = await fetch(dev.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }) });
      return ((await res.json()) as { result: unknown }).result;
    };
    const relayer = dev.accounts.relayer.address;
    const deps = { ledger, clock: systemClock, newId, config: { spending: { approvalTimeoutMs: 3_600_000 } } };
    const project = await ledger.projects.create({ name: "unfunded relayer", plan: "free" });
    const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index) as Address;
    await ledger.projects.setWalletAddress(project.id, wallet);
    const agent = await issueToken(deps, { projectId: project.id, permissions: ["read", "pay"], mode: "test" });
    const get = async (path: string) => {
      const res = await fetch(`${server!.baseUrl}${path}`, { headers: { authorization: `Bearer ${agent.token}` } });
      return (await res.json()) as Record<string, any>;
    };
    const unfundedGauge = async () => {
      const text = await (await fetch(`${server!.baseUrl}/metrics`)).text();
      return /^agentwallet_relayer_unfunded (\S+)$/m.exec(text)?.[1];
    };

    server = await spawnServer(f.env({ RELAYER_GAP_CHECK_MS: "200" }));
    // All the process says from here on (its output() keeps only the tail, which other warnings can fill).
    let log = "";
    for (const stream of [server.child.stdout!, server.child.stderr!]) stream.on("data", (d) => (log += d));
    await dev.mint(wallet, 10_000_000n);
    await poll("deposit credited", async () => ((await ledger.balances.get(project.id))!.available_micros > 0 ? true : undefined));
    expect(await unfundedGauge()).toBe("0");

    const balance = (await rpc("eth_getBalance", [relayer, "latest"])) as Hex;
    await rpc("anvil_setBalance", [relayer, "0x0"]);
    const res = await fetch(`${server.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" }, body: JSON.stringify({ recipient: TO, amount_usd: 1.25 }) });
    const paid = (await res.json()) as { id: string; status: string };
    expect(res.status).toBeLessThan(300);

    // The payment waits and says why, from the first refusal on.
    const waiting = await poll("the payment says it waits for the relayer", async () => {
      const t = await get(`/v1/transactions/${paid.id}`);
      return t.waiting ? t : undefined;
    });
    expect(waiting).toMatchObject({ status: "processing", waiting: { code: "relayer_unfunded" } });
    expect(Date.parse(waiting.waiting.since)).toBeGreaterThan(0);
    expect(await unfundedGauge()).toBe("1");
    // Tried again and again meanwhile (the gap check resends every 200 ms), but said once.
    const refusedSince = log.length;
    await poll("several more tries", async () => ((await ledger.payments.getPayment(paid.id))!.attempts >= 3 ? true : undefined));
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await ledger.payments.getPayment(paid.id))!.status).toBe("processing");
    expect(log.split(UNFUNDED_LOG).length - 1).toBe(1);
    expect(log.slice(refusedSince)).not.toContain("broadcast failed");

    // Funded: it completes by itself, and nothing says it waits any more.
    await rpc("anvil_setBalance", [relayer, balance]);
    const done = await poll("completed once funded", async () => {
      const t = await get(`/v1/transactions/${paid.id}`);
      return t.status === "completed" ? t : undefined;
    });
    expect(done.waiting).toBeUndefined();
    expect(await unfundedGauge()).toBe("0");
    expect(log).toContain("the relayer pays gas again");
    const balanceOf = (await rpc("eth_call", [{ to: dev.usdcAddress, data: `0x70a08231${TO.slice(2).padStart(64, "0")}` }, "latest"])) as Hex;
    expect(BigInt(balanceOf)).toBe(1_250_000n);
  }, 300_000);
});
