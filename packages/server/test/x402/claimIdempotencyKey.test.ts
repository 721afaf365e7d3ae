// The claim of an x402 idempotency key, on real SQLite and PostgreSQL: exactly one of many concurrent
// requests wins it, a free reply is kept for repeats, a refusal gives it up, and a dead claim is taken
// over only once its lease has passed.
import type { PayResponse } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { PASS_THROUGH_KEEP_MS, claimIdempotencyKey, pruneExpiredPassThrough } from "../../src/rails/x402/claimIdempotencyKey.ts";
import { createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";

const reply: PayResponse = { id: "req_x", status: "completed", rail: "x402", amount_charged: 0, fee: 0, currency: "usdc", recipient: "https://x.test", tx_hash: null, created_at: "2026-01-01T00:00:00.000Z", estimated_arrival: null, response: { status_code: 200, headers: {}, body: "ok" } };

describe.each(dialects)("%s", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => {
    await t?.close();
  });

  test("behavior: of 50 concurrent claims of one key exactly one wins; the others get 409", async () => {
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => claimIdempotencyKey(t.ctx, "prj_a", "k1")));
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results.filter((x) => x.status === "rejected")) expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 409, code: "idempotency_in_flight" });
  });

  test("behavior: keys are per project", async () => {
    expect((await claimIdempotencyKey(t.ctx, "prj_a", "k2")).kind).toBe("claimed");
    expect((await claimIdempotencyKey(t.ctx, "prj_b", "k2")).kind).toBe("claimed");
  });

  test("behavior: a remembered free reply is returned to repeats", async () => {
    const c = await claimIdempotencyKey(t.ctx, "prj_a", "k3");
    if (c.kind !== "claimed") throw new Error("expected a claim");
    await c.claim.rememberPassThrough(reply);
    expect(await claimIdempotencyKey(t.ctx, "prj_a", "k3")).toEqual({ kind: "passthrough", body: reply });
  });

  test("behavior: a released key can be claimed again", async () => {
    const c = await claimIdempotencyKey(t.ctx, "prj_a", "k4");
    if (c.kind !== "claimed") throw new Error("expected a claim");
    await c.claim.release();
    expect((await claimIdempotencyKey(t.ctx, "prj_a", "k4")).kind).toBe("claimed");
  });

  test("behavior: a claim whose request died is taken over after its lease, and the dead one can no longer release or bind it", async () => {
    const dead = await claimIdempotencyKey(t.ctx, "prj_a", "k5");
    if (dead.kind !== "claimed") throw new Error("expected a claim");
    await expect(claimIdempotencyKey(t.ctx, "prj_a", "k5")).rejects.toMatchObject({ status: 409 });
    const later = { ...t.ctx, clock: () => new Date(Date.now() + t.ctx.config.workers.paymentRequestLeaseMs + 1_000) };
    const taken = await claimIdempotencyKey(later, "prj_a", "k5");
    expect(taken.kind).toBe("claimed");
    await dead.claim.release();
    await dead.claim.rememberPassThrough(reply);
    await expect(claimIdempotencyKey(t.ctx, "prj_a", "k5")).rejects.toMatchObject({ status: 409 });
  });
});

describe.each(dialects)("kept pass-through replies expire (%s)", (dialect) => {
  test("after 24 hours a reply no longer answers its key and the sweep removes it; a newer one stays", async () => {
    const t = await createTestContext(dialect);
    try {
      const { project } = await projectWithToken(t.ctx);
      const body = { id: "req_x", status: "completed", rail: "x402", amount_charged: 0, fee: 0, currency: "usdc", recipient: "https://x", tx_hash: null, created_at: new Date().toISOString(), estimated_arrival: null, response: null } as PayResponse;
      const remember = async (key: string) => {
        const c = await claimIdempotencyKey(t.ctx, project.id, key);
        if (c.kind !== "claimed") throw new Error(`${key} not claimed`);
        await c.claim.rememberPassThrough(body);
      };
      await remember("old");
      expect((await claimIdempotencyKey(t.ctx, project.id, "old")).kind).toBe("passthrough");
      const start = Date.now();
      t.ctx.clock = () => new Date(start + PASS_THROUGH_KEEP_MS + 1_000); // a day later
      await remember("fresh");
      expect(await pruneExpiredPassThrough(t.ctx, undefined)).toBeUndefined();
      const left = await t.ctx.ledger.db.selectFrom("kv").select("key").where("key", "like", "x402_idempotency:%").execute();
      expect(left.map((r) => r.key)).toEqual([`x402_idempotency:${project.id}:fresh`]);
      expect((await claimIdempotencyKey(t.ctx, project.id, "fresh")).kind).toBe("passthrough");
      expect((await claimIdempotencyKey(t.ctx, project.id, "old")).kind).toBe("claimed");
    } finally {
      await t.close();
    }
  });
});
