// Approvals end to end on a real chain, across a kill -9: a sandbox server (a child process) accepts two
// USDC payments above the token's approval threshold as `pending`; it is killed and a new one started,
// and both still wait; the operator approves one through the admin API (it completes on-chain) and denies
// the other (failed, credited back); a third, accepted by a server whose approval timeout is short, fails
// undecided once that passes and is credited back. The ledger then equals the wallet to the unit.
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createChainClient } from "../../src/chain/chainClient.ts";
import { createHdCustody } from "../../src/chain/custody.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createAdminCredential } from "../../src/services/adminCredentials.ts";
import { issueToken } from "../../src/services/tokens.ts";
import { TEST_MNEMONIC } from "../support/context.ts";
import { poll } from "../support/poll.ts";
import { type SandboxProcessFixture, startSandboxProcessFixture } from "../support/sandboxProcess.ts";
import { type ServerProcess, spawnServer } from "../support/spawnServer.ts";

const USD = 1_000_000;
const TO_APPROVED = "0x00000000000000000000000000000000000a9901" as Address;
const TO_DENIED = "0x00000000000000000000000000000000000a9902" as Address;
const TO_EXPIRED = "0x00000000000000000000000000000000000a9903" as Address;

describe("approvals on the real chain across a restart", () => {
  let f: SandboxProcessFixture;
  let server: ServerProcess | undefined;
  beforeAll(async () => {
    f = await startSandboxProcessFixture("approvals");
  });
  afterAll(async () => {
    await server?.stop();
    await f?.close();
  });

  test("behavior: pending above the threshold; a restart changes nothing; approve → completed on-chain; deny and timeout → failed and credited", async () => {
    const { dev, ledger } = f;
    const env = (approvalTimeoutMs: number) => f.env({ APPROVAL_TIMEOUT_MS: String(approvalTimeoutMs) });
    const deps = { ledger, clock: systemClock, newId, config: { spending: { approvalTimeoutMs: 3_600_000 } } };
    const project = await ledger.projects.create({ name: "approvals", plan: "free" });
    const wallet = createHdCustody(TEST_MNEMONIC).addressOf(project.wallet_index) as Address;
    await ledger.projects.setWalletAddress(project.id, wallet);
    const agent = await issueToken(deps, { projectId: project.id, permissions: ["read", "pay"], mode: "test", controls: { approval_above_usd: 1 } });
    const admin = await createAdminCredential(deps, { name: "approver" });

    const pay = async (to: Address, amountUsd: number) => {
      const res = await fetch(`${server!.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" }, body: JSON.stringify({ recipient: to, amount_usd: amountUsd }) });
      return { status: res.status, body: (await res.json()) as { id: string; status: string } };
    };
    const decide = async (id: string, verb: "approve" | "deny") => {
      const res = await fetch(`${server!.baseUrl}/v1/admin/payments/${id}/${verb}`, { method: "POST", headers: { authorization: `Bearer ${admin.credential}` } });
      return { status: res.status, body: (await res.json()) as Record<string, unknown> };
    };
    const settled = (id: string) => poll(`payment ${id} final`, async () => {
      const p = await ledger.payments.getPayment(id);
      return p && (p.status === "completed" || p.status === "failed") ? p : undefined;
    });

    server = await spawnServer(env(3_600_000));
    await dev.mint(wallet, 20n * BigInt(USD));
    await poll("deposit credited", async () => ((await ledger.balances.get(project.id))!.available_micros > 0 ? true : undefined));

    const approved = await pay(TO_APPROVED, 2);
    const denied = await pay(TO_DENIED, 3);
    expect([approved.status, approved.body.status, denied.status, denied.body.status]).toEqual([201, "pending", 201, "pending"]);
    const held = (await ledger.balances.get(project.id))!;
    expect(held.available_micros + held.held_micros).toBe(20 * USD);

    // A kill -9 and a new process: both still wait, nothing was sent.
    await server.kill9();
    server = await spawnServer(env(1_500));
    for (const id of [approved.body.id, denied.body.id]) expect(await ledger.payments.getPayment(id)).toMatchObject({ status: "pending", approval: "awaiting", txHash: null });

    // Accepted now, with the short timeout: nobody decides it.
    const expired = await pay(TO_EXPIRED, 4);
    expect([expired.status, expired.body.status]).toEqual([201, "pending"]);

    expect((await decide(approved.body.id, "approve")).status).toBe(200);
    expect((await decide(denied.body.id, "deny")).status).toBe(200);
    // Decided once: a second decision is refused.
    expect((await decide(denied.body.id, "approve")).status).toBe(409);

    const [a, d, e] = [await settled(approved.body.id), await settled(denied.body.id), await settled(expired.body.id)];
    expect(a).toMatchObject({ status: "completed", approval: "approved", approvalDecidedBy: admin.id });
    expect(d).toMatchObject({ status: "failed", approval: "denied", failureCode: "approval_denied" });
    expect(e).toMatchObject({ status: "failed", approval: "expired", failureCode: "approval_expired" });
    for (const p of [d, e]) expect(p.txHash).toBeNull();

    // On-chain: only the approved payment moved; the ledger equals the wallet.
    const chain = createChainClient({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress, timeoutMs: 5_000, retries: 1 });
    expect(await chain.usdcBalance(TO_APPROVED)).toBe(2n * BigInt(USD));
    expect(await chain.usdcBalance(TO_DENIED)).toBe(0n);
    expect(await chain.usdcBalance(TO_EXPIRED)).toBe(0n);
    const b = (await ledger.balances.get(project.id))!;
    expect(b.held_micros).toBe(0);
    // The fee is swept to the treasury by the worker: wait until the wallet shows it.
    await poll("wallet equals the ledger", async () => (Number(await chain.usdcBalance(wallet)) === b.available_micros ? true : undefined));
    expect(b.available_micros).toBe(20 * USD - 2 * USD - a.feeMicros);
    expect((await ledger.verify()).problems).toEqual([]);
    // Two server processes start here, each allowed spawnServer's 90 s on a busy machine; every wait after is bounded too.
  }, 300_000);
});
