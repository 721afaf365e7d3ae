// Settlement in a thread of its own, on the real server and chain: accepted payments complete while the
// request thread's event loop is frozen (nothing on it could move them), a settlement thread that dies is
// started again and the payments it held complete exactly once, and settlement inline still works.
import Database from "better-sqlite3";
import type { Address } from "viem";
import { afterEach, describe, expect, test } from "vitest";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { untilFinal } from "../support/holds.ts";

const recipient: Address = "0xa0Ee7A142d267C1f36714E4a8F75612F20a79720";

let s: TestServer | undefined;
afterEach(async () => {
  await s?.stop();
  s = undefined;
});

async function pay(server: TestServer, amountUsd: number): Promise<{ id: string; status: string }> {
  const res = await fetch(`${server.baseUrl}/v1/pay`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: JSON.stringify({ recipient, amount_usd: amountUsd }),
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { id: string; status: string };
}

/** Blocks this thread (and so its event loop) for `ms`, as a long synchronous request would. */
function freezeEventLoop(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Keeps this thread's event loop frozen until every payment is final or `limitMs` passed, reading their
 * statuses through a connection of its own, synchronously: nothing on this thread runs meanwhile, however
 * long a loaded machine takes to settle. Returns the statuses last read.
 */
function frozenUntilFinal(sqlitePath: string, ids: string[], limitMs: number): string[] {
  const db = new Database(sqlitePath, { readonly: true });
  try {
    const read = db.prepare("select status from payments where id = ?").pluck();
    const deadline = Date.now() + limitMs;
    for (;;) {
      const statuses = ids.map((id) => read.get(id) as string);
      if (statuses.every((s) => s !== "pending" && s !== "processing") || Date.now() > deadline) return statuses;
      freezeEventLoop(100);
    }
  } finally {
    db.close();
  }
}

describe("settlement thread", () => {
  test("behavior: accepted payments complete while the request thread's event loop is frozen", async () => {
    s = await startTestServer({ env: { SETTLEMENT: "thread" } });
    expect(await (await fetch(`${s.baseUrl}/readyz`)).json()).toEqual({ status: "ready", settlement: "running" });
    await s.fund(5_000_000n);
    const before = await s.server.chain!.client.usdcBalance(recipient);
    const accepted = await Promise.all([pay(s, 0.25), pay(s, 0.5)]);
    expect(accepted.map((p) => p.status)).toEqual(["pending", "pending"]);
    // Let this loop hand the payments over (next turn), then stop it: only another thread can settle them.
    await new Promise((r) => setImmediate(r));
    const frozen = frozenUntilFinal(s.server.ctx.config.sqlitePath, accepted.map((p) => p.id), 60_000);
    expect(frozen).toEqual(["completed", "completed"]);
    const rows = await Promise.all(accepted.map((p) => s!.server.ctx.ledger.payments.getPayment(p.id)));
    expect(rows.map((r) => r!.status)).toEqual(["completed", "completed"]);
    expect((await s.server.chain!.client.usdcBalance(recipient)) - before).toBe(750_000n);
    expect((await s.server.ctx.ledger.verify()).ok).toBe(true);
  });

  test("recovery: a settlement thread that dies is started again, and its payments complete once", async () => {
    s = await startTestServer({ env: { SETTLEMENT: "thread", PAYMENT_REQUEST_LEASE_MS: "1000" } });
    await s.fund(5_000_000n);
    const before = await s.server.chain!.client.usdcBalance(recipient);
    const first = s.server.settlement.thread()!;
    const firstId = first.threadId;
    const accepted = await Promise.all([pay(s, 0.1), pay(s, 0.2), pay(s, 0.3)]);
    // Dies with the payments handed over and possibly part-way: signed, stored, broadcast or not.
    await first.terminate();
    const finals = await Promise.all(accepted.map((p) => untilFinal(s!.server.ctx, p.id)));
    expect(finals.map((p) => p.status)).toEqual(["completed", "completed", "completed"]);
    const again = s.server.settlement.thread();
    expect(again).toBeDefined();
    expect(again!.threadId).not.toBe(firstId);
    // Exactly the three amounts arrived: nothing was sent twice by the thread that took over.
    expect((await s.server.chain!.client.usdcBalance(recipient)) - before).toBe(600_000n);
    expect((await s.server.ctx.ledger.verify()).ok).toBe(true);
  });

  test("behavior: with SETTLEMENT=inline the request thread settles, and no thread is started", async () => {
    s = await startTestServer({ env: { SETTLEMENT: "inline" } });
    await s.fund(1_000_000n);
    expect(s.server.settlement.thread()).toBeUndefined();
    const p = await pay(s, 0.05);
    expect((await untilFinal(s.server.ctx, p.id)).status).toBe("completed");
  });
});
