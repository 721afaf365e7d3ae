// What a parent token reads of its descendants' payments, on real SQLite and PostgreSQL: GET /v1/transactions
// is the project's list, so a grandchild's payment is in its ancestors' lists (as in every other token's of the
// project); GET /v1/tokens gives each descendant's spend with its own descendants' rolled up; GET /v1/limits
// counts it against every ancestor's windows (childLimits.test.ts checks those numbers window by window).
import { describe, expect, test } from "vitest";
import { createToken } from "../../src/services/tokens.ts";
import { useTestApp } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { ledgerOn } from "../support/db.ts";
import { holdByToken, paymentByToken } from "../support/holds.ts";
import { setAvailable, spendWindows } from "../../src/ledger/testing.ts";
import { updateTokenControls } from "../../src/services/spendingControls.ts";
import { windowStart } from "../../src/domain/spending.ts";

describe.each(dialects)("a branch's payments rolled up (%s)", (dialect) => {
  const { t, app } = useTestApp(dialect);

  const call = async (method: "GET" | "POST", url: string, token: string, payload?: object) => {
    const res = await app.inject({ method, url, headers: { authorization: `Bearer ${token}` }, ...(payload ? { payload } : {}) });
    expect(res.statusCode, res.body).toBeLessThan(300);
    return res.json();
  };

  const pay = async (tokenId: string, usd: number) => expect((await holdByToken(t.ctx, tokenId, usd)).kind).toBe("held");

  test("behavior: a grandchild's payment is in its ancestors' transaction lists and in their descendants' spend", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "rolled up", plan: "free" });
    await setAvailable(t.ctx.ledger, project.id, 1_000_000_000);
    const root = await createToken(t.ctx, { projectId: project.id, permissions: ["read", "pay", "delegate"], mode: "test", name: "planner" });
    const mid = await call("POST", "/v1/tokens", root.token, { name: "researcher", permissions: ["read", "pay", "delegate"], allowance_usd: 10 });
    const leaf = await call("POST", "/v1/tokens", mid.token, { name: "fetcher", permissions: ["read", "pay"], allowance_usd: 4 });
    const sibling = await call("POST", "/v1/tokens", root.token, { name: "writer", permissions: ["read", "pay"], allowance_usd: 4 });
    await pay(leaf.id, 1.5);
    await pay(mid.id, 1);
    await pay(sibling.id, 0.25);

    // The list is the project's: the root, the researcher and the fetcher all read the fetcher's payment.
    const amounts = async (token: string) => ((await call("GET", "/v1/transactions", token)).transactions as { amount: number }[]).map((x) => x.amount);
    for (const token of [root.token, mid.token, leaf.token]) expect(await amounts(token)).toEqual(expect.arrayContaining([1_500_000, 1_000_000, 250_000]));

    // Spend rolled up: the researcher's includes the fetcher's; the root sees both, the researcher only its branch.
    const spent = (list: { data: { id: string; spent_usd: number }[] }) => Object.fromEntries(list.data.map((d) => [d.id, d.spent_usd]));
    expect(spent(await call("GET", "/v1/tokens", root.token))).toEqual({ [mid.id]: 2.5, [leaf.id]: 1.5, [sibling.id]: 0.25 });
    expect(spent(await call("GET", "/v1/tokens", mid.token))).toEqual({ [leaf.id]: 1.5 });
    // And the limits: the researcher's allowance as the fetcher inherits it counts both.
    const windows = (await call("GET", "/v1/limits", leaf.token)).windows as { scope: string; token_id?: string; spent_usd: number }[];
    expect(windows.find((w) => w.scope === "ancestor_allowance" && w.token_id === mid.id)?.spent_usd).toBe(2.5);
  });

  test("behavior: a daily limit set on a branch after it paid counts the branch's payments of the day: not yesterday's, not a failed one, not a sibling's", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "seeded", plan: "free" });
    await setAvailable(t.ctx.ledger, project.id, 1_000_000_000);
    const root = await createToken(t.ctx, { projectId: project.id, permissions: ["read", "pay", "delegate"], mode: "test", name: "planner" });
    const mid = await call("POST", "/v1/tokens", root.token, { name: "researcher", permissions: ["read", "pay", "delegate"] });
    const leaf = await call("POST", "/v1/tokens", mid.token, { name: "fetcher", permissions: ["read", "pay"] });
    const sibling = await call("POST", "/v1/tokens", root.token, { name: "writer", permissions: ["read", "pay"] });
    await pay(leaf.id, 1.5);
    await pay(mid.id, 1);
    await pay(sibling.id, 4);
    // Yesterday's payment by the leaf, held by a ledger whose clock is a day behind; and one of today's that fails.
    const yesterday = ledgerOn(t.db, () => new Date(Date.now() - 86_400_000));
    expect((await yesterday.payments.hold(await paymentByToken(t.ctx, leaf.id, 2))).kind).toBe("held");
    const failed = await holdByToken(t.ctx, leaf.id, 0.5);
    if (failed.kind !== "held") throw new Error("not held");
    await t.ctx.ledger.payments.resolve(failed.payment.id, "failed");

    // The researcher's daily limit, set now: its first hold writes the window's counter as 1.5 + 1 spent already.
    await updateTokenControls(t.ctx, mid.id, { spending_limits: [{ amount_usd: 3, interval: "daily" }] });
    await pay(leaf.id, 0.5);
    const [counter] = await spendWindows(t.ctx.ledger, [mid.id]).then((rows) => rows.filter((r) => r.kind === "daily" && r.window_start === windowStart("daily", new Date())));
    expect(Number(counter!.spent_micros)).toBe(3_000_000);
    expect((await holdByToken(t.ctx, leaf.id, 0.01)).kind).toBe("refused");
  });

  test("behavior: a payment authenticated before a limit and one after it, held in one batch: the window's first counter counts both", async () => {
    const project = await t.ctx.ledger.projects.create({ name: "one batch", plan: "free" });
    await setAvailable(t.ctx.ledger, project.id, 1_000_000_000);
    const agent = await createToken(t.ctx, { projectId: project.id, permissions: ["read", "pay"], mode: "test", name: "agent" });
    await pay(agent.id, 1);
    // Authenticated before the limit: its hold judges no window, and only moves counters that exist.
    const stale = await paymentByToken(t.ctx, agent.id, 2);
    await updateTokenControls(t.ctx, agent.id, { spending_limits: [{ amount_usd: 10, interval: "daily" }] });
    const fresh = await paymentByToken(t.ctx, agent.id, 3);
    // Asked for in one turn, so they share one write (PostgreSQL: one aw_hold_batch call; SQLite: one group commit).
    const held = await Promise.all([t.ctx.ledger.payments.hold(stale), t.ctx.ledger.payments.hold(fresh)]);
    expect(held.map((h) => h.kind)).toEqual(["held", "held"]);
    const [counter] = (await spendWindows(t.ctx.ledger, [agent.id])).filter((r) => r.kind === "daily" && r.window_start === windowStart("daily", new Date()));
    expect(Number(counter!.spent_micros)).toBe(6_000_000);
  });
});
