// A limit set in the middle of its window counts everything already spent in that window, on real SQLite
// and PostgreSQL: payments made before the token or its project had any control, payments of a token whose
// other window was the only limit, failed and reversed payments given back, and payments still arriving
// while the limit is being set.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type SpendingControls, parseControls, windowStart } from "../../src/domain/spending.ts";
import type { Principal } from "../../src/domain/principal.ts";
import { holdPayment } from "../../src/services/payments/hold.ts";
import { getTokenLimits, updateControls, updateTokenControls, type WireControls } from "../../src/services/spendingControls.ts";
import { createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";
import { moveToken, paymentRows, setAvailable, spendWindows } from "../../src/ledger/testing.ts";

const USD = 1_000_000;

describe.each(dialects)("a limit set mid-window (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  /** A project with a token and 1,000 USD available. */
  async function funded() {
    const p = await projectWithToken(t.ctx);
    await setAvailable(t.ctx.ledger, p.project.id, 1_000 * USD);
    return { projectId: p.project.id, tokenId: p.tokenId };
  }

  /** The principal as authentication reads it now: the token's and the project's controls from the database. */
  async function authenticate(projectId: string, tokenId: string): Promise<Principal> {
    const token = await t.ctx.ledger.tokens.get(tokenId);
    const project = await t.ctx.ledger.projects.get(projectId);
    const controls = { token: parseControls(token!.spending_controls), project: parseControls(project!.spending_controls ?? null) as SpendingControls | null };
    return { tokenId, projectId, permissions: new Set(["read", "pay"]), paused: false, plan: "free", walletIndex: project!.wallet_index, balance: { availableMicros: 0, pendingMicros: 0, totalFundedMicros: 0, totalSpentMicros: 0, walletAddress: null, walletFrozenAt: null }, controls };
  }

  /** A USDC payment of `usd` through the payment core's hold: "held", or the refusal's code. */
  async function pay(projectId: string, tokenId: string, usd: number): Promise<string> {
    const { projectId: _p, leaseOwner: _l, controls: _c, ...p } = usdcPayment(projectId, usd * USD, 0, { feeUnits: 0 });
    try {
      return (await holdPayment(t.ctx, await authenticate(projectId, tokenId), p)).replayed ? "replayed" : "held";
    } catch (err) {
      return (err as { code?: string }).code ?? String(err);
    }
  }

  const daily = (usd: number): WireControls => ({ spending_limits: [{ amount_usd: usd, interval: "daily" }] });
  const windowsOf = async (tokenId: string) => (await getTokenLimits(t.ctx, tokenId)).windows.map((w) => [w.scope, w.interval, w.spent_usd, w.remaining_usd]);

  test("behavior: a token pays 3 × $2 without controls, then gets a daily limit of $2 → spent 6, remaining 0, the next $2 refused", async () => {
    const { projectId, tokenId } = await funded();
    for (let i = 0; i < 3; i++) expect(await pay(projectId, tokenId, 2)).toBe("held");
    await updateTokenControls(t.ctx, tokenId, daily(2));
    expect(await windowsOf(tokenId)).toEqual([["token", "daily", 6, 0]]);
    expect(await pay(projectId, tokenId, 2)).toBe("spending_limit_exceeded");
  });

  test("behavior: a daily limit added to a token that had only a weekly one counts the day's spending", async () => {
    const { projectId, tokenId } = await funded();
    await updateTokenControls(t.ctx, tokenId, { spending_limits: [{ amount_usd: 100, interval: "weekly" }] });
    for (let i = 0; i < 3; i++) expect(await pay(projectId, tokenId, 2)).toBe("held");
    await updateTokenControls(t.ctx, tokenId, { spending_limits: [{ amount_usd: 100, interval: "weekly" }, { amount_usd: 7, interval: "daily" }] });
    expect(await windowsOf(tokenId)).toEqual([["token", "daily", 6, 1], ["token", "weekly", 6, 94]]);
    expect(await pay(projectId, tokenId, 2)).toBe("spending_limit_exceeded");
    expect(await pay(projectId, tokenId, 1)).toBe("held");
    expect(await windowsOf(tokenId)).toEqual([["token", "daily", 7, 0], ["token", "weekly", 7, 93]]);
  });

  test("behavior: a project limit set later counts every token's spending; a removed then re-added limit counts what was paid meanwhile", async () => {
    const { projectId, tokenId } = await funded();
    const second = await projectWithToken(t.ctx);
    // Move the second token into this project, so two tokens pay from it.
    await moveToken(t.ctx.ledger, second.tokenId, projectId);
    expect(await pay(projectId, tokenId, 3)).toBe("held");
    expect(await pay(projectId, second.tokenId, 4)).toBe("held");
    await updateControls(t.ctx, "project", projectId, daily(10));
    expect(await windowsOf(tokenId)).toEqual([["project", "daily", 7, 3]]);
    expect(await pay(projectId, second.tokenId, 3)).toBe("held");
    expect(await pay(projectId, tokenId, 1)).toBe("spending_limit_exceeded");
    // Without the limit the window keeps counting; put back, it still knows all of it.
    await updateControls(t.ctx, "project", projectId, { spending_limits: [] });
    expect(await pay(projectId, tokenId, 5)).toBe("held");
    await updateControls(t.ctx, "project", projectId, daily(20));
    expect(await windowsOf(tokenId)).toEqual([["project", "daily", 15, 5]]);
  });

  test("behavior: payments made before the limit that fail or are reversed later give their amount back to its window", async () => {
    const { projectId, tokenId } = await funded();
    for (let i = 0; i < 3; i++) expect(await pay(projectId, tokenId, 2)).toBe("held");
    const ids = (await paymentRows(t.ctx.ledger, { projectId })).map((r) => r.id);
    await t.ctx.ledger.payments.resolve(ids[0]!, "failed", { failureCode: "payout_failed", failureReason: "test" });
    await updateTokenControls(t.ctx, tokenId, daily(5));
    expect(await windowsOf(tokenId)).toEqual([["token", "daily", 4, 1]]);
    // One counted by the limit's first hold, one already in the counter: each fails or is reversed once.
    await t.ctx.ledger.payments.resolve(ids[1]!, "failed", { failureCode: "payout_failed", failureReason: "test" });
    expect(await windowsOf(tokenId)).toEqual([["token", "daily", 2, 3]]);
    expect(await pay(projectId, tokenId, 3)).toBe("held");
    await t.ctx.ledger.payments.resolve(ids[2]!, "completed");
    expect(await t.ctx.ledger.payments.reverse(ids[2]!, "R01")).toBe(true);
    expect(await windowsOf(tokenId)).toEqual([["token", "daily", 3, 2]]);
    expect(await pay(projectId, tokenId, 3)).toBe("spending_limit_exceeded");
    expect(await pay(projectId, tokenId, 2)).toBe("held");
  });

  test("behavior: payments arriving while the limit is set: every window's counter equals the ledger's sum, and from then on the limit holds exactly", async () => {
    const { projectId, tokenId } = await funded();
    for (let i = 0; i < 10; i++) expect(await pay(projectId, tokenId, 1)).toBe("held");
    // 40 payments of $1, each authenticated as it starts, while the $15 daily limit is set among them.
    const racing = Array.from({ length: 40 }, (_, i) => (i === 20 ? updateTokenControls(t.ctx, tokenId, daily(15)).then(() => "set") : pay(projectId, tokenId, 1)));
    const outcomes = await Promise.all(racing);
    expect(outcomes.filter((o) => o !== "held" && o !== "set" && o !== "spending_limit_exceeded")).toEqual([]);
    const spentInLedger = async () => {
      const rows = (await paymentRows(t.ctx.ledger, { projectId })).filter((r) => r.status !== "failed" && r.status !== "reversed");
      return rows.reduce((s, r) => s + Number(r.amount_micros), 0) / USD;
    };
    const held = 10 + outcomes.filter((o) => o === "held").length;
    expect(await spentInLedger()).toBe(held);
    const [window] = (await getTokenLimits(t.ctx, tokenId)).windows;
    expect(window!.spent_usd).toBe(held);
    // From here the limit is known to every request: exactly what remains of $15 is accepted.
    const after = await Promise.all(Array.from({ length: 20 }, () => pay(projectId, tokenId, 1)));
    expect(after.filter((o) => o === "held")).toHaveLength(Math.max(0, 15 - held));
    expect((await getTokenLimits(t.ctx, tokenId)).windows[0]!.spent_usd).toBe(Math.max(15, held));
    expect(await spentInLedger()).toBe(Math.max(15, held));
    // Every counter of the token and the project, of every kind, is the ledger's sum for its window.
    const counters = await spendWindows(t.ctx.ledger, [tokenId, projectId]);
    for (const c of counters) {
      expect([c.scope_id, c.kind, c.window_start, Number(c.spent_micros) / USD]).toEqual([c.scope_id, c.kind, windowStart(c.kind as "daily", new Date()), Math.max(15, held)]);
    }
  });
});
