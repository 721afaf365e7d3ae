import { join } from "node:path";
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createChainClient } from "../../src/chain/chainClient.ts";
import { createHdCustody } from "../../src/chain/custody.ts";
import type { OpenedDb } from "../../src/ledger/db.ts";
import { Ledger } from "../../src/ledger/store.ts";
import { windowStart } from "../../src/domain/spending.ts";
import { verifyLedger } from "../../src/ledger/verify.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createToken } from "../../src/services/tokens.ts";
import { parseControlsInput, controlsColumn } from "../../src/services/spendingControls.ts";
import { TEST_MNEMONIC } from "../support/context.ts";
import { poll } from "../support/poll.ts";
import { openLiveDeployment, spawnServer, type ServerProcess } from "../support/spawnServer.ts";
import { dbOf } from "../../src/ledger/connection.ts";

const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";

describe.each([
  ["sqlite", 1],
  ["postgres", 2],
] as const)("200 concurrent payments against a daily limit that covers exactly 10 (%s, %i server process(es))", (dialect, processes) => {
  let dev: DevChain;
  let opened: OpenedDb;
  let ledger: Ledger;
  let servers: ServerProcess[] = [];
  let cleanup: () => Promise<void>;
  let token: string;
  let projectId: string;
  let wallet: Address;

  beforeAll(async () => {
    dev = await startDevChain();
    let env: NodeJS.ProcessEnv;
    ({ opened, ledger, env, cleanup } = await openLiveDeployment(dev, dialect, "aw-conc-"));
    const project = await ledger.projects.create({ name: "hot", plan: "free" });
    projectId = project.id;
    wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index);
    await ledger.projects.setWalletAddress(project.id, wallet);
    const created = await createToken({ ledger, clock: systemClock, newId }, { projectId, permissions: ["read", "pay"], mode: "live" });
    token = created.token;
    await ledger.tokens.setSpendingControls("token", created.id, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 10, interval: "daily" }] }, new Uint8Array(32))));
    servers = await Promise.all(Array.from({ length: processes }, () => spawnServer(env)));
    // The balance covers 20 payments of 1 USDC + 0.02 fee; the daily limit 10.
    await dev.mint(wallet, 20_400_000n);
    await poll("deposit credited", async () => ((await ledger.balances.get(projectId))!.available_micros === 20_400_000 ? true : undefined), 30_000);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await dev?.stop();
    await opened?.close();
    await cleanup?.();
  });

  test("exactly 10 succeed, 190 get 403 spending_limit_exceeded; balance and window exact; journal verifies; 10 USDC moved on-chain", async () => {
    const client = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 });
    const r0 = await client.usdcBalance(recipient);
    const results = await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const res = await fetch(`${servers[i % servers.length]!.baseUrl}/v1/pay`, {
          method: "POST",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
          body: JSON.stringify({ recipient, amount_usd: 1 }),
        });
        return { status: res.status, body: (await res.json()) as { detail?: string; code?: string } };
      }),
    );
    const ok = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 403);
    const failed = await dbOf(ledger).selectFrom("payments").select(["id", "failure_reason"]).where("status", "=", "failed").execute();
    expect(failed, `failed payments: ${JSON.stringify(failed)}\n${servers.map((s) => s.output()).join("\n")}`).toEqual([]);
    expect(ok).toHaveLength(10);
    expect(refused).toHaveLength(190);
    for (const r of refused) {
      expect(r.body.code).toBe("spending_limit_exceeded");
      expect(r.body.detail).toMatch(/^Spending limit exceeded: the token's daily limit is 10.000000 USD; spent 10.000000 USD in the window .* remaining 0.000000 USD/);
    }
    await poll("all payments final", async () => {
      const open = await dbOf(ledger).selectFrom("payments").select("id").where("status", "in", ["pending", "processing"]).execute();
      return open.length === 0 ? true : undefined;
    });
    const b = (await ledger.balances.get(projectId))!;
    expect(b).toMatchObject({ available_micros: 10_200_000, held_micros: 0, total_spent_micros: 10_200_000 });
    expect(await ledger.payments.windowSpending([{ scopeId: (await ledger.tokens.list(projectId))[0]!.id, kind: "daily", start: windowStart("daily", new Date()) }])).toEqual([10_000_000]);
    expect((await verifyLedger(dbOf(ledger))).problems).toEqual([]);
    expect((await client.usdcBalance(recipient)) - r0).toBe(10_000_000n);
    expect(await client.usdcBalance(wallet)).toBe(10_200_000n);
  });
});
