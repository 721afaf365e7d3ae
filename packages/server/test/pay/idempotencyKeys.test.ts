// The claim of an idempotency key before a payment row owns it (x402: the price comes after a request),
// on real SQLite and PostgreSQL: exactly one of many concurrent requests wins it, a free reply is kept for
// repeats, a refusal gives it up, and a dead claim is taken over only once its lease has passed. Rows the
// x402 rail kept in `kv` before migration 0018 move to the one store and answer as before.
import type { PayResponse } from "@agentwallet/api";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { KEPT_REPLY_MS as PASS_THROUGH_KEEP_MS, claimKey as claimIdempotencyKey, keptReply } from "../../src/services/payments/idempotency.ts";
import { createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { kvRows, putKv, rerunMigration, tableRows } from "../../src/ledger/testing.ts";

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
    for (const r of results.filter((x) => x.status === "rejected")) expect((r as PromiseRejectedResult).reason).toMatchObject({ kind: "conflict", code: "idempotency_in_flight" });
  });

  test("behavior: keys are per project", async () => {
    expect((await claimIdempotencyKey(t.ctx, "prj_a", "k2")).kind).toBe("claimed");
    expect((await claimIdempotencyKey(t.ctx, "prj_b", "k2")).kind).toBe("claimed");
  });

  test("behavior: a remembered free reply is returned to repeats", async () => {
    const c = await claimIdempotencyKey(t.ctx, "prj_a", "k3");
    if (c.kind !== "claimed") throw new Error("expected a claim");
    await c.claim.keepReply(reply);
    expect(await claimIdempotencyKey(t.ctx, "prj_a", "k3")).toEqual({ kind: "reply", body: reply });
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
    await expect(claimIdempotencyKey(t.ctx, "prj_a", "k5")).rejects.toMatchObject({ kind: "conflict" });
    const later = { ...t.ctx, clock: () => new Date(Date.now() + t.ctx.config.workers.paymentRequestLeaseMs + 1_000) };
    const taken = await claimIdempotencyKey(later, "prj_a", "k5");
    expect(taken.kind).toBe("claimed");
    await dead.claim.release();
    await dead.claim.keepReply(reply);
    await expect(claimIdempotencyKey(t.ctx, "prj_a", "k5")).rejects.toMatchObject({ kind: "conflict" });
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
        await c.claim.keepReply(body);
      };
      await remember("old");
      expect((await claimIdempotencyKey(t.ctx, project.id, "old")).kind).toBe("reply");
      const start = Date.now();
      t.ctx.clock = () => new Date(start + PASS_THROUGH_KEEP_MS + 1_000); // a day later
      await remember("fresh");
      expect(await t.ctx.ledger.idempotencyKeys.pruneExpired(t.ctx.clock().toISOString())).toBe(1);
      const left = await tableRows(t.ctx.ledger, "idempotency_keys");
      expect(left.map((k) => ({ project_id: k.project_id, key: k.key }))).toEqual([{ project_id: project.id, key: "fresh" }]);
      expect((await claimIdempotencyKey(t.ctx, project.id, "fresh")).kind).toBe("reply");
      expect((await claimIdempotencyKey(t.ctx, project.id, "old")).kind).toBe("claimed");
    } finally {
      await t.close();
    }
  });
});

describe.each(dialects)("x402 idempotency rows written to kv by an earlier release (%s)", (dialect) => {
  test("migration 0018 moves them: a kept reply answers its key as before, a live claim still holds it, kv keeps none", async () => {
    const t = await createTestContext(dialect);
    try {
      const { project } = await projectWithToken(t.ctx);
      const now = Date.now();
      const later = new Date(now + 3_600_000).toISOString();
      // Exactly as claimIdempotencyKey.ts of the previous release wrote them (its key may hold ':').
      await putKv(t.ctx.ledger, [
        { key: `x402_idempotency:${project.id}:kept:1`, value: JSON.stringify({ state: "passthrough", body: reply, expires: later }) },
        { key: `x402_idempotency:${project.id}:kept-no-expiry`, value: JSON.stringify({ state: "passthrough", body: reply }) },
        { key: `x402_idempotency:${project.id}:gone`, value: JSON.stringify({ state: "passthrough", body: reply, expires: new Date(now - 1_000).toISOString() }) },
        { key: `x402_idempotency:${project.id}:running`, value: JSON.stringify({ state: "running", until: later, token: "abc" }) },
      ]);
      // Re-run 0018 over them, as an upgrade from the previous release does.
      expect(await rerunMigration(t.ctx.ledger, "0018_idempotency_keys", ["idempotency_keys"])).toEqual(["0018_idempotency_keys"]);

      expect(await claimIdempotencyKey(t.ctx, project.id, "kept:1")).toEqual({ kind: "reply", body: reply });
      expect(await keptReply(t.ctx, project.id, "kept-no-expiry")).toEqual(reply);
      expect((await claimIdempotencyKey(t.ctx, project.id, "gone")).kind).toBe("claimed");
      await expect(claimIdempotencyKey(t.ctx, project.id, "running")).rejects.toMatchObject({ kind: "conflict", code: "idempotency_in_flight" });
      expect(await kvRows(t.ctx.ledger, "x402_idempotency:")).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
