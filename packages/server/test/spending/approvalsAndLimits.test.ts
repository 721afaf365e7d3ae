// Approvals as a state of the held payment (decided by a person, expired by the worker's step), the
// GET /v1/limits answer, and the CLI's control options, on real SQLite and PostgreSQL.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { Ledger } from "../../src/ledger/store.ts";
import { newId } from "../../src/ids.ts";
import { controlsFromOptions } from "../../src/cli/spendingCommands.ts";
import { decidePayment } from "../../src/services/approvals.ts";
import { controlsColumn, parseControlsInput } from "../../src/services/spendingControls.ts";
import { parseControls, windowStart } from "../../src/domain/spending.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "../support/context.ts";
import { dialects, ledgerOn } from "../support/db.ts";
import { usdcPayment } from "../support/holds.ts";

const USD = 1_000_000;
const KEY = new Uint8Array(32);

describe.each(dialects)("approvals and GET /v1/limits (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  async function funded(ledger: Ledger, micros: number) {
    const p = await ledger.projects.create({ name: "p", plan: "free" });
    const key = { chain: "base", txHash: `0x${p.id}`, logIndex: 0 };
    await ledger.deposits.recordSeen({ ...key, projectId: p.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: micros, blockNumber: 1, blockHash: "0xh" });
    await ledger.deposits.credit(key);
    return p.id;
  }
  const approvalControls = (tokenId: string) => ({
    tokenId,
    token: parseControls(controlsColumn(parseControlsInput({ approval_above_usd: 50, spending_limits: [{ amount_usd: 500, interval: "daily" }] }, KEY))),
    project: null,
    recipientKey: "addr:0x90f79bf6eb2c4f870365e785982e1f101e93b906",
    approvalTimeoutMs: 60_000,
  });

  test("behavior: above the threshold → held and awaiting, leased to nobody; deny → failed with approval_denied, credited, window given back", async () => {
    const ledger = t.ctx.ledger;
    const projectId = await funded(ledger, 1_000 * USD);
    const c = approvalControls(newId("tok"));
    const h = await ledger.payments.hold(usdcPayment(projectId, 60 * USD, USD, { controls: c }));
    expect(h.kind).toBe("held");
    const p = (h as { payment: { id: string; approval: string | null; leaseOwner: string | null } }).payment;
    expect([p.approval, p.leaseOwner]).toEqual(["awaiting", null]);
    expect(await ledger.payments.listAwaitingApprovals({ projectId, limit: 10 })).toHaveLength(1);
    const denied = await decidePayment({ ledger, clock: t.ctx.clock }, p.id, "denied", "adm_test");
    expect(denied.kind === "decided" && [denied.payment.status, denied.payment.failureCode]).toEqual(["failed", "approval_denied"]);
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(1_000 * USD);
    expect(await ledger.payments.windowSpending([{ scopeId: c.tokenId, kind: "daily", start: windowStart("daily", new Date()) }])).toEqual([0]);
    // Decided once: approving afterwards changes nothing.
    expect((await decidePayment({ ledger, clock: t.ctx.clock }, p.id, "approved", "adm_test")).kind).toBe("not_awaiting");
    // The console's list of decisions: who and when, the project's only.
    const decided = await ledger.payments.listDecidedApprovals(projectId, 5);
    expect(decided.map((d) => [d.id, d.approval, d.approvalDecidedBy, typeof d.approvalDecidedAt])).toEqual([[p.id, "denied", "adm_test", "string"]]);
    expect((await ledger.verify()).problems).toEqual([]);
  });

  test("behavior: approve → due at once for the worker; a timeout (injected clock) → failed with approval_expired, and a late approval is refused", async () => {
    let now = new Date();
    const ledger = ledgerOn(t.db, () => now);
    const projectId = await funded(ledger, 1_000 * USD);
    const c = approvalControls(newId("tok"));
    const a = await ledger.payments.hold(usdcPayment(projectId, 60 * USD, USD, { controls: c }));
    const b = await ledger.payments.hold(usdcPayment(projectId, 70 * USD, USD, { controls: c }));
    const [pa, pb] = [a, b].map((h) => (h as { payment: import("../../src/domain/payment.ts").Payment }).payment);
    const approved = await decidePayment({ ledger, clock: () => now }, pa!.id, "approved", "adm_test");
    expect(approved.kind === "decided" && [approved.payment.approval, approved.payment.approvalDecidedBy, approved.payment.approvalDecidedAt]).toEqual(["approved", "adm_test", now.toISOString()]);
    expect(await ledger.payments.settleApproval(approved.kind === "decided" ? approved.payment : pa!)).toEqual({ handled: false });
    // Before its time runs out the worker leaves the other one alone.
    expect((await ledger.payments.settleApproval(pb!)).handled).toBe(true);
    expect((await ledger.payments.getPayment(pb!.id))!.status).toBe("pending");
    now = new Date(now.getTime() + 61_000);
    expect((await decidePayment({ ledger, clock: () => now }, pb!.id, "approved", "adm_test")).kind).toBe("not_awaiting");
    const expired = await ledger.payments.settleApproval((await ledger.payments.getPayment(pb!.id))!);
    expect([expired.payment?.status, expired.payment?.failureCode]).toEqual(["failed", "approval_expired"]);
    // Only the approved one (60 + 1 fee) is still held.
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(1_000 * USD - 61 * USD);
  });

  test("behavior: GET /v1/limits shows the token's controls and, per window, spent and remaining", async () => {
    const { project, token, tokenId } = await projectWithToken(t.ctx, ["read", "pay"]);
    await t.ctx.ledger.tokens.setSpendingControls("token", tokenId, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 10, interval: "daily" }, { amount_usd: 2, interval: "per_payment" }], allowed_recipients: ["api.example.com", "*.example.org"], allowed_rails: ["x402"] }, KEY)));
    await t.ctx.ledger.tokens.setSpendingControls("project", project.id, controlsColumn(parseControlsInput({ spending_limits: [{ amount_usd: 100, interval: "monthly" }] }, KEY)));
    const app = buildApp(t.ctx);
    const res = await app.inject({ method: "GET", url: "/v1/limits", headers: { authorization: `Bearer ${token}` } });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.token).toMatchObject({ spending_limits: [{ amount_usd: 2, interval: "per_payment" }, { amount_usd: 10, interval: "daily" }], allowed_recipients: ["api.example.com", "*.example.org"], allowed_rails: ["x402"], approval_above_usd: null });
    expect(body.windows).toEqual([
      expect.objectContaining({ scope: "token", interval: "daily", limit_usd: 10, spent_usd: 0, remaining_usd: 10 }),
      expect.objectContaining({ scope: "project", interval: "monthly", limit_usd: 100, spent_usd: 0, remaining_usd: 100 }),
    ]);
    await app.close();
  });
});

test("behavior: CLI control options change only what they name; bank accounts are kept as a keyed hash and the last four", () => {
  const first = controlsFromOptions({ "daily-limit-usd": "10", "max-payment-usd": "2", allow: ["api.example.com", "0x90F79bf6EB2c4f870365E785982E1f101E93b906", "bank:021000021:123456789"], rails: "x402,usdc_transfer", "approval-above-usd": "50" }, null, KEY);
  expect(first.column).not.toContain("123456789");
  expect(first.column).toContain("bank:021000021:6789:");
  const second = controlsFromOptions({ "daily-limit-usd": "20" }, first.column, KEY);
  const c = parseControls(second.column)!;
  expect(c.limits).toEqual([{ interval: "per_payment", amountMicros: 2 * USD }, { interval: "daily", amountMicros: 20 * USD }]);
  expect(c.allowedRecipients).toHaveLength(3);
  expect(c.approvalAboveMicros).toBe(50 * USD);
  expect(() => controlsFromOptions({ rails: "x402,carrier_pigeon" }, null, KEY)).toThrow(/allowed_rails/);
});

test("error: allow/block lists take exactly the bank accounts POST /v1/pay takes (one validator): a routing number failing its ABA check is refused in every form", () => {
  // 021000022: nine digits, but its check digit does not match (POST /v1/pay refuses it).
  for (const input of [{ blocked_recipients: [{ routing_number: "021000022", account_number: "123456789" }] }, { allowed_recipients: ["bank:021000022:123456789"] }]) {
    expect(() => parseControlsInput(input, KEY)).toThrow(/routing_number .*ABA/);
  }
  expect(() => controlsFromOptions({ block: ["bank:021000022:123456789"] }, null, KEY)).toThrow(/routing_number .*ABA/);
  // An account number /v1/pay accepts (up to 34 characters) can be listed, so such a payee can be blocked.
  const long = parseControlsInput({ blocked_recipients: [{ routing_number: "021000021", account_number: "1234567890123456789012" }] }, KEY);
  expect(long.blockedRecipients[0]).toMatch(/^bank:021000021:9012:/);
  expect(() => parseControlsInput({ blocked_recipients: [{ routing_number: "021000021", account_number: "123" }] }, KEY)).toThrow(/account_number/);
});
