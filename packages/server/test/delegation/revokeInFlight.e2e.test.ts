// Revoking an ancestor while its descendants have payments in flight, on the real chain and both ledgers:
// mining is paused so the descendants' USDC payments are accepted and cannot finish; the branch is revoked
// (DELETE /v1/tokens/{id} by the root); the next request of every token in it is 401 while a sibling branch
// still works; mining resumes and each payment in flight finishes or fails as it would (a USDC transfer is
// paid on-chain, a payout the off-ramp refuses fails and is credited back). Nothing is lost: the recipient
// holds what was paid, the spend rolls up to the ancestors, and the ledger verifies.
import { type Address, createTestClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { SANDBOX_REFUSE_ACCOUNT } from "../../src/rails/fiat/sandboxProvider.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { createPgSchema, dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";

const RECIPIENT: Address = "0x976EA74026E726554dB657fA54763abd0C3a0aa9";

describe.each(dialects)("revoking a branch with payments in flight (%s)", (dialect) => {
  let s: TestServer;
  let dropSchema: (() => Promise<void>) | undefined;
  let anvil: ReturnType<typeof createTestClient>;
  beforeAll(async () => {
    const pg = dialect === "postgres" ? await createPgSchema() : undefined;
    dropSchema = pg?.drop;
    s = await startTestServer({ database: dialect, databaseUrl: pg?.url, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
    await s.fund(20_000_000n);
    anvil = createTestClient({ mode: "anvil", transport: http(s.server.chain!.client.settings.rpcUrl) });
  });
  afterAll(async () => {
    await anvil?.setAutomine(true).catch(() => undefined);
    await s?.stop();
    await dropSchema?.();
  });

  const call = async (method: "GET" | "POST" | "DELETE", path: string, token: string, body?: unknown) => {
    const res = await fetch(`${s.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) }, body: body === undefined ? undefined : JSON.stringify(body) });
    return { status: res.status, json: (await res.json()) as any };
  };
  const status = async (id: string) => (await s.server.ctx.ledger.payments.getPayment(id))!.status;
  const final = (id: string) =>
    poll(`payment ${id} final`, async () => {
      const p = await s.server.ctx.ledger.payments.getPayment(id);
      return p && ["completed", "failed", "reversed"].includes(p.status) ? p : undefined;
    });

  test("behavior: the next request of every descendant is 401; payments in flight finish or fail as they would; nothing is lost", async () => {
    const root = await s.createToken(["read", "pay", "delegate"]);
    const mk = async (parent: string, name: string, permissions: string[]) => {
      const res = await call("POST", "/v1/tokens", parent, { name, permissions, allowance_usd: 5 });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      return res.json as { id: string; token: string };
    };
    const a = await mk(root, "a", ["read", "pay", "delegate"]);
    const a1 = await mk(a.token, "a1", ["read", "pay", "delegate"]);
    const a2 = await mk(a1.token, "a2", ["read", "pay"]);
    const b = await mk(root, "b", ["read", "pay"]);
    const paidBefore = await s.server.chain!.client.usdcBalance(RECIPIENT);
    const availableBefore = (await call("GET", "/v1/balance", root)).json.available as number;

    // No blocks until the test says so: the accepted USDC payments cannot finish.
    await anvil.setIntervalMining({ interval: 0 });
    await anvil.setAutomine(false);
    const pay = async (token: string, recipient: unknown, usd: number) => {
      const res = await call("POST", "/v1/pay", token, { recipient, amount_usd: usd });
      expect(res.status, JSON.stringify(res.json)).toBe(201);
      return res.json.id as string;
    };
    const inFlight = {
      a: await pay(a.token, RECIPIENT, 0.5),
      a1: await pay(a1.token, RECIPIENT, 0.25),
      a2: await pay(a2.token, RECIPIENT, 0.125),
      refused: await pay(a2.token, { name: "Refused Payee", account_number: SANDBOX_REFUSE_ACCOUNT, routing_number: "021000021" }, 1),
    };
    for (const id of [inFlight.a, inFlight.a1, inFlight.a2]) expect(["pending", "processing"]).toContain(await status(id));

    const revoked = await call("DELETE", `/v1/tokens/${a.id}`, root);
    expect(revoked.status, JSON.stringify(revoked.json)).toBe(200);
    for (const [name, tok] of [["a", a], ["a1", a1], ["a2", a2]] as const) {
      const read = await call("GET", "/v1/balance", tok.token);
      expect([name, read.status, read.json.code]).toEqual([name, 401, "unauthorized"]);
      const again = await call("POST", "/v1/pay", tok.token, { recipient: RECIPIENT, amount_usd: 0.01 });
      expect([name, again.status]).toEqual([name, 401]);
    }
    // The revocation did not touch what was accepted before it, nor the sibling branch.
    for (const id of [inFlight.a, inFlight.a1, inFlight.a2]) expect(["pending", "processing"]).toContain(await status(id));
    expect((await call("GET", "/v1/balance", b.token)).status).toBe(200);

    await anvil.setAutomine(true);
    await anvil.mine({ blocks: 1 });
    const finals = Object.fromEntries(await Promise.all(Object.entries(inFlight).map(async ([k, id]) => [k, await final(id)] as const)));
    expect(finals.a).toMatchObject({ status: "completed" });
    expect(finals.a1).toMatchObject({ status: "completed" });
    expect(finals.a2).toMatchObject({ status: "completed" });
    expect(finals.refused).toMatchObject({ status: "failed", failureCode: "payout_refused" });

    // Nothing lost: the recipient holds the three transfers; the balance lost them and their fees only
    // (the refused payout was credited back); the spend rolls up to the revoked branch and to the root.
    expect((await s.server.chain!.client.usdcBalance(RECIPIENT)) - paidBefore).toBe(875_000n);
    const fees = [finals.a, finals.a1, finals.a2].reduce((sum, p) => sum + Number(p!.feeMicros), 0);
    expect((await call("GET", "/v1/balance", root)).json.available).toBe(availableBefore - 875_000 - fees);
    const tree = Object.fromEntries(((await call("GET", "/v1/tokens", root)).json.data as { id: string; state: string; spent_usd: number }[]).map((t) => [t.id, [t.state, t.spent_usd]]));
    expect(tree).toEqual({ [a.id]: ["revoked", 0.875], [a1.id]: ["revoked", 0.375], [a2.id]: ["revoked", 0.125], [b.id]: ["active", 0] });
    expect((await s.server.ctx.ledger.verify()).problems).toEqual([]);
  });
});
