// Nested budgets under concurrency, through real server processes on a real chain: a parent with a daily
// limit of 10 USD and five children each allowed 5 USD (25 together). 500 concurrent payments of 0.10 USD
// spread over the children and the parent accept exactly 10 USD in all and never more than 5 USD for any
// child, on SQLite (one process) and on PostgreSQL with two server processes.
import { startDevChain, type DevChain } from "@agentwallet/devchain";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createHdCustody } from "../../src/chain/custody.ts";
import type { OpenedDb } from "../../src/ledger/db.ts";
import { Ledger } from "../../src/ledger/store.ts";
import { windowStart } from "../../src/domain/spending.ts";
import { verifyLedger } from "../../src/ledger/verify.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createToken } from "../../src/services/tokens.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { TEST_MNEMONIC } from "../support/context.ts";
import { poll } from "../support/poll.ts";
import { openLiveDeployment, spawnServer, type ServerProcess } from "../support/spawnServer.ts";
import { dbOf } from "../../src/ledger/connection.ts";

const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const PAYMENTS = 500;

describe.each([
  ["sqlite", 1],
  ["postgres", 2],
] as const)("500 concurrent payments over a parent (daily 10 USD) and five children (5 USD each) (%s, %i server process(es))", (dialect, processes) => {
  let dev: DevChain;
  let opened: OpenedDb;
  let ledger: Ledger;
  let servers: ServerProcess[] = [];
  let cleanup: () => Promise<void>;
  let parent: { id: string; token: string };
  let children: { id: string; token: string }[] = [];
  let projectId: string;

  beforeAll(async () => {
    dev = await startDevChain();
    let env: NodeJS.ProcessEnv;
    ({ opened, ledger, env, cleanup } = await openLiveDeployment(dev, dialect, "aw-nested-"));
    const project = await ledger.projects.create({ name: "tree", plan: "free" });
    projectId = project.id;
    const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index);
    await ledger.projects.setWalletAddress(project.id, wallet);
    parent = await createToken({ ledger, clock: systemClock, newId }, { projectId, permissions: ["read", "pay", "delegate"], mode: "live", name: "planner" });
    await ledger.tokens.setSpendingControls("token", parent.id, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 10, interval: "daily" }] }, new Uint8Array(32))));
    servers = await Promise.all(Array.from({ length: processes }, () => spawnServer(env)));
    // The children are made by the parent itself, through the API.
    children = [];
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${servers[0]!.baseUrl}/v1/tokens`, {
        method: "POST",
        headers: { authorization: `Bearer ${parent.token}`, "content-type": "application/json" },
        body: JSON.stringify({ name: `researcher ${i}`, permissions: ["pay"], allowance_usd: 5 }),
      });
      expect(res.status).toBe(201);
      children.push((await res.json()) as { id: string; token: string });
    }
    // The balance covers 300 payments of 0.10 USDC + 0.002 fee: the limits, not the balance, must stop them.
    await dev.mint(wallet, 30_600_000n);
    await poll("deposit credited", async () => ((await ledger.balances.get(projectId))!.available_micros === 30_600_000 ? true : undefined), 30_000);
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
    await dev?.stop();
    await opened?.close();
    await cleanup?.();
  });

  test("exactly 10 USD accepted in all, at most 5 USD by any child; every refusal names the limit; the ledger verifies", async () => {
    // Half of the payments go to the first child, so its allowance is tested as hard as the parent's limit.
    const payerOf = (i: number) => (i % 10 === 0 ? parent : i % 2 === 1 ? children[0]! : children[1 + (i % 4)]!);
    const results = await Promise.all(
      Array.from({ length: PAYMENTS }, async (_, i) => {
        const payer = payerOf(i);
        const res = await fetch(`${servers[i % servers.length]!.baseUrl}/v1/pay`, {
          method: "POST",
          headers: { authorization: `Bearer ${payer.token}`, "content-type": "application/json" },
          body: JSON.stringify({ recipient, amount_usd: 0.1 }),
        });
        return { payer: payer.id, status: res.status, body: (await res.json()) as { code?: string; detail?: string } };
      }),
    );
    const accepted = results.filter((r) => r.status === 201);
    const refused = results.filter((r) => r.status === 403);
    expect(accepted.length + refused.length, JSON.stringify(results.filter((r) => r.status !== 201 && r.status !== 403).slice(0, 3))).toBe(PAYMENTS);
    expect(accepted).toHaveLength(100);
    for (const r of refused) expect(r.body.code).toBe("spending_limit_exceeded");
    for (const c of children) expect(accepted.filter((r) => r.payer === c.id).length).toBeLessThanOrEqual(50);
    const rows = await dbOf(ledger).selectFrom("payments").select(["token_id", "amount_micros"]).where("project_id", "=", projectId).execute();
    expect(rows.reduce((s, r) => s + Number(r.amount_micros), 0)).toBe(10_000_000);
    for (const c of children) expect(rows.filter((r) => r.token_id === c.id).reduce((s, r) => s + Number(r.amount_micros), 0)).toBeLessThanOrEqual(5_000_000);
    // The counters agree: the parent's daily window holds everything, each child's allowance its own.
    const day = windowStart("daily", new Date());
    expect(await ledger.payments.windowSpending([{ scopeId: parent.id, kind: "daily", start: day }])).toEqual([10_000_000]);
    const childSpent = await ledger.payments.windowSpending(children.map((c) => ({ scope: "token" as const, scopeId: c.id, kind: "all_time", start: "all", projectId })));
    childSpent.forEach((s, i) => expect(s).toBe(rows.filter((r) => r.token_id === children[i]!.id).reduce((a, r) => a + Number(r.amount_micros), 0)));
    await poll(
      "all payments final",
      async () => ((await dbOf(ledger).selectFrom("payments").select("id").where("status", "in", ["pending", "processing"]).execute()).length === 0 ? true : undefined),
      120_000,
    );
    expect(await dbOf(ledger).selectFrom("payments").select("id").where("status", "=", "failed").execute()).toEqual([]);
    expect((await ledger.balances.get(projectId))!).toMatchObject({ available_micros: 30_600_000 - 10_200_000, held_micros: 0 });
    expect((await verifyLedger(dbOf(ledger))).problems).toEqual([]);
    // 500 requests to two processes, then up to 120 s for the accepted ones to settle on-chain (the poll above).
  }, 300_000);
});
