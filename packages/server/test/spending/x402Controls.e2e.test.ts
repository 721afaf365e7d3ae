// Spending controls on x402 against real merchants (`@x402/express` v2, settled by x402's own facilitator
// on anvil): a price above the token's per_payment limit is refused before anything is signed; a host
// outside the allow-list is refused before any connection (a listener counts the sockets it accepts);
// within the limits the merchant is paid. The refusals are in the operator's list.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { countingListener } from "../support/net.ts";
import { listRefusals } from "../../src/services/spendingControls.ts";
import { issueToken } from "../../src/services/tokens.ts";
import { type X402World, startX402World } from "../x402/support/x402World.ts";

const PRICE_MICROS = 10_000n; // $0.01

describe.each(["sqlite", "postgres"] as const)("x402 under spending controls (%s)", (database) => {
  let w: X402World;
  let merchant: Awaited<ReturnType<X402World["startMerchant"]>>;
  let listener: Awaited<ReturnType<typeof countingListener>>;
  const tokenWith = async (controls: Parameters<typeof issueToken>[1]["controls"]) =>
    (await issueToken(w.ctx, { projectId: w.server.projectId, permissions: ["read", "pay", "x402"], mode: "test", controls })).token;

  beforeAll(async () => {
    w = await startX402World({ database, fundMicros: 1_000_000n });
    merchant = await w.startMerchant(2, PRICE_MICROS);
    listener = await countingListener();
  });
  afterAll(async () => {
    await listener?.close();
    await w?.stop();
  });

  test("error: a price above per_payment → 403 spending_limit_exceeded, no signature, nothing paid", async () => {
    const token = await tokenWith({ spending_limits: [{ amount_usd: 0.005, interval: "per_payment" }] });
    const [signatures, paid] = [w.signatures.count(), await w.balanceOf(merchant.payTo)];
    const answer = await w.post("/v1/pay", { recipient: `${merchant.url}/paid`, max_amount_usdc: 50_000 }, token);
    expect([answer.status, answer.body.code]).toEqual([403, "spending_limit_exceeded"]);
    expect(answer.body.detail).toContain("per_payment limit is 0.005000 USD and this payment is 0.010000 USD");
    expect(w.signatures.count()).toBe(signatures);
    expect(await w.balanceOf(merchant.payTo)).toBe(paid);
  });

  test("error: a host outside the allow-list → 403 recipient_not_allowed and zero connections to it", async () => {
    const token = await tokenWith({ allowed_recipients: ["api.example.com"] });
    const signatures = w.signatures.count();
    const answer = await w.post("/v1/pay", { recipient: `${listener.url}/paid`, max_amount_usdc: 50_000 }, token);
    expect([answer.status, answer.body.code]).toEqual([403, "recipient_not_allowed"]);
    expect(listener.accepted()).toBe(0);
    expect(w.signatures.count()).toBe(signatures);
    // The listener does count: a connection the test makes itself is seen.
    await fetch(listener.url).catch(() => undefined);
    expect(listener.accepted()).toBe(1);
  });

  test("error: a url that is not a URL, with a controlled token and the rail running → 400 naming the field, never a 500", async () => {
    const token = await tokenWith({ spending_limits: [{ amount_usd: 1, interval: "daily" }] });
    for (const url of ["true", "https://", "//example.com/x"]) {
      const answer = await w.post("/v1/x402/pay", { url, max_amount_usdc: 20_000 }, token);
      expect([answer.status, answer.body.code], url).toEqual([400, "url_invalid"]);
      expect(answer.body.detail).toMatch(/^url must be an https URL/);
    }
  });

  test("behavior: within the limits and on the allow-list → the merchant is paid its price", async () => {
    const token = await tokenWith({ spending_limits: [{ amount_usd: 0.05, interval: "per_payment" }, { amount_usd: 1, interval: "daily" }], allowed_recipients: ["127.0.0.1"], allowed_rails: ["x402"] });
    const paid = await w.balanceOf(merchant.payTo);
    const answer = await w.post("/v1/pay", { recipient: `${merchant.url}/paid`, max_amount_usdc: 50_000 }, token);
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ rail: "x402", amount_charged: Number(PRICE_MICROS) });
    if (answer.body.status !== "completed") expect(await w.settle(String(answer.body.id))).toBe("completed");
    expect(await w.balanceOf(merchant.payTo)).toBe(paid + PRICE_MICROS);
    const limits = await w.get("/v1/limits", token);
    expect(limits.body.windows).toEqual([expect.objectContaining({ interval: "daily", spent_usd: 0.01, remaining_usd: 0.99 })]);

    const refusals = await listRefusals(w.ctx, { projectId: w.server.projectId, limit: 10 });
    expect(refusals.map((r) => r.code).sort()).toEqual(["recipient_not_allowed", "spending_limit_exceeded"]);
  });

  test("behavior: a child token's allow-list binds it: outside → 403 with zero connections; a sibling within it pays, counted in the parent's window", async () => {
    const parent = await issueToken(w.ctx, {
      projectId: w.server.projectId,
      permissions: ["read", "pay", "x402", "delegate"],
      mode: "test",
      controls: { spending_limits: [{ amount_usd: 1, interval: "daily" }], allowed_recipients: ["api.example.com", "127.0.0.1"] },
    });
    const narrow = await w.post("/v1/tokens", { name: "narrow", permissions: ["pay", "x402"], spending_controls: { allowed_recipients: ["api.example.com"] } }, parent.token);
    const wide = await w.post("/v1/tokens", { name: "wide", permissions: ["read", "pay", "x402"], spending_controls: { allowed_recipients: ["127.0.0.1"] }, allowance_usd: 0.5 }, parent.token);
    expect([narrow.status, wide.status]).toEqual([201, 201]);
    const [signatures, connections] = [w.signatures.count(), listener.accepted()];
    const refused = await w.post("/v1/pay", { recipient: `${listener.url}/paid`, max_amount_usdc: 50_000 }, String(narrow.body.token));
    expect([refused.status, refused.body.code]).toEqual([403, "recipient_not_allowed"]);
    expect(refused.body.detail).toContain("is not on this token's allowed_recipients list (api.example.com)");
    expect(listener.accepted()).toBe(connections);
    expect(w.signatures.count()).toBe(signatures);
    const paid = await w.balanceOf(merchant.payTo);
    const answer = await w.post("/v1/pay", { recipient: `${merchant.url}/paid`, max_amount_usdc: 50_000 }, String(wide.body.token));
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    if (answer.body.status !== "completed") expect(await w.settle(String(answer.body.id))).toBe("completed");
    expect(await w.balanceOf(merchant.payTo)).toBe(paid + PRICE_MICROS);
    const parentLimits = await w.get("/v1/limits", parent.token);
    expect(parentLimits.body.windows).toEqual([expect.objectContaining({ interval: "daily", spent_usd: 0.01 })]);
  });
});
