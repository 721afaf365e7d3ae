// The tests' inspection port (ledger/testing.ts) on real SQLite and PostgreSQL: each read finds what the ledger
// wrote through its own operations, filtered as named, and each write sets up or breaks exactly the state it
// names. These tests are the one place besides the port that know the port reads the database directly.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { HoldControls, SpendingControls } from "../src/domain/spending.ts";
import { newId, systemClock } from "../src/ids.ts";
import { dbOf } from "../src/ledger/connection.ts";
import type { Ledger } from "../src/ledger/store.ts";
import * as port from "../src/ledger/testing.ts";
import { createToken } from "../src/services/tokens.ts";
import { createTestLedger, dialects, type TestLedger } from "./support/db.ts";
import { depositFundedProject, usdcPayment } from "./support/holds.ts";

const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const daily: SpendingControls = { limits: [{ interval: "daily", amountMicros: 50_000_000 }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };
const controls = (tokenId: string): HoldControls & { approvalTimeoutMs: number } => ({ tokenId, token: daily, project: null, recipientKey: `addr:${RECIPIENT.toLowerCase()}`, approvalTimeoutMs: 86_400_000 });

async function held(ledger: Ledger, projectId: string, amountMicros: number, more: Parameters<typeof usdcPayment>[3] = {}): Promise<string> {
  const r = await ledger.payments.hold(usdcPayment(projectId, amountMicros, 10, more));
  if (r.kind !== "held") throw new Error(`not held: ${r.kind}`);
  return r.payment.id;
}

describe.each(dialects)("the ledger's inspection port for tests (%s)", (dialect) => {
  let t: TestLedger;
  let ledger: Ledger;
  beforeAll(async () => {
    t = await createTestLedger(dialect);
    ledger = t.ledger;
  });
  afterAll(async () => t?.drop());

  test("default: payments are read as stored, filtered by each field, and the open ones are those not final", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    const other = await depositFundedProject(ledger, 10_000_000);
    const a = await held(ledger, projectId, 1_000, { idempotencyKey: "key-a" });
    const b = await held(ledger, projectId, 2_000, { recipient: "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65" });
    const c = await held(ledger, other, 3_000);
    await ledger.payments.resolve(b, "completed");
    await ledger.payments.resolve(c, "failed");

    const ids = async (filter: port.PaymentFilter) => (await port.paymentRows(ledger, filter)).map((p) => p.id);
    expect(await ids({ projectId })).toEqual([a, b]);
    expect(await ids({ projectId: [projectId, other] })).toEqual([a, b, c]);
    expect(await ids({ ids: [c, a] })).toEqual([a, c]);
    expect(await ids({ status: "completed" })).toEqual([b]);
    expect(await ids({ projectId, status: ["pending", "processing", "failed"] })).toEqual([a]);
    expect(await ids({ recipient: "0x15d34AAf54267DB7D7c367839AAf71A00a2C6A65" })).toEqual([b]);
    expect(await ids({ idempotencyKey: "key-a" })).toEqual([a]);
    expect(await ids({ providerRef: "none" })).toEqual([]);
    expect((await port.openPayments(ledger)).map((p) => [p.id, p.status, p.amount_micros])).toEqual([[a, "pending", 1_000]]);
    await ledger.payments.resolve(a, "failed");
    expect(await port.openPayments(ledger)).toEqual([]);
    expect((await ledger.verify()).problems).toEqual([]);
  });

  test("behavior: transactions are read by project, payment and id; written, restated and counted in place", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    const paid = await held(ledger, projectId, 1_000);
    const rows = await port.transactionRows(ledger, { projectId });
    expect(rows.map((r) => r.type).sort()).toEqual(["platform_fee", "usdc_fund", "usdc_transfer"]);
    const ofPayment = rows.filter((r) => r.payment_id === paid);
    expect(ofPayment.length).toBeGreaterThan(0);
    expect(await port.transactionRows(ledger, { paymentId: paid })).toEqual(ofPayment);
    expect(await port.transactionRow(ledger, rows[0]!.id)).toEqual(rows[0]);
    expect(await port.transactionRow(ledger, "txn_none")).toBeUndefined();

    const id = newId("txn");
    await port.insertTransactions(ledger, [{ id, project_id: projectId, payment_id: null, type: "usdc_transfer", status: "pending", amount: 5, currency: "usdc", description: null, merchant_name: null, created_at: "2026-01-02T03:04:05.000Z", completed_at: null, pos: 99 }]);
    await port.setTransactionStatus(ledger, id, "completed");
    expect(await port.transactionRow(ledger, id)).toMatchObject({ project_id: projectId, status: "completed", amount: 5, pos: 99 });
    await port.setTransactionCount(ledger, projectId, 42);
    expect((await port.balanceRows(ledger, [projectId]))[0]!.tx_count).toBe(42);
    if (dialect === "sqlite") {
      // The kept counts exist on SQLite only; moved by hand, verify-ledger names the project.
      const key = { projectId, day: "2026-01-02", type: "usdc_transfer", status: "completed" };
      await port.shiftTransactionCount(ledger, key, 1);
      expect((await ledger.verify()).problems).toContainEqual(expect.objectContaining({ check: "transaction_counts_match", detail: expect.stringContaining(projectId) }));
      await port.shiftTransactionCount(ledger, key, -1);
      expect((await ledger.verify()).problems.filter((p) => p.check === "transaction_counts_match")).toEqual([]);
    }
  });

  test("behavior: balances are set and moved in place; the journal is read by project, kind and account totals", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    await port.setAvailable(ledger, projectId, 7_000);
    await port.shiftAvailable(ledger, projectId, 2);
    expect((await port.balanceRows(ledger, [projectId])).map((b) => [b.project_id, b.available_micros])).toEqual([[projectId, 7_002]]);
    expect((await port.balanceRows(ledger)).map((b) => b.project_id)).toContain(projectId);
    expect((await ledger.verify()).ok).toBe(false);
    await port.setAvailable(ledger, projectId, 10_000_000);

    const entries = await port.journalEntries(ledger, { projectId });
    expect(entries.length).toBeGreaterThan(0);
    expect(new Set(entries.map((e) => e.project_id))).toEqual(new Set([projectId]));
    expect((await port.journalEntries(ledger, { projectId, kind: "deposit" })).every((e) => e.kind === "deposit")).toBe(true);
    const totals = await port.journalTotals(ledger, [projectId]);
    expect(totals).toContainEqual({ account: `project:${projectId}:available`, sum: 10_000_000, n: expect.any(Number) });
    expect(totals.reduce((n, x) => n + x.n, 0)).toBe(entries.filter((e) => e.account.includes(projectId)).length);
    expect(await port.journalTotals(ledger, [])).toEqual([]);
  });

  test("behavior: spend windows are read by scope", async () => {
    const projectId = await depositFundedProject(ledger, 100_000_000);
    const tokenId = newId("tok");
    await held(ledger, projectId, 3_000_000, { controls: controls(tokenId), tokenId });
    expect((await port.spendWindows(ledger, [tokenId])).map((w) => [w.scope_id, w.kind, w.spent_micros])).toEqual([[tokenId, "daily", 3_000_000]]);
    expect(await port.spendWindows(ledger, [projectId])).toEqual([]);
  });

  test("behavior: a token moved to another project is listed there", async () => {
    const [projectId, other] = [(await ledger.projects.create({ name: "a", plan: "free" })).id, (await ledger.projects.create({ name: "b", plan: "free" })).id];
    const { id } = await createToken({ ledger, clock: systemClock, newId }, { projectId, permissions: ["read"], mode: "test" });
    await port.moveToken(ledger, id, other);
    expect((await ledger.tokens.list(projectId)).map((k) => k.id)).toEqual([]);
    expect((await ledger.tokens.list(other)).map((k) => k.id)).toEqual([id]);
  });

  test("behavior: relayer transactions, deposits, kv rows, received webhooks, the return watch and quotes", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    const paid = await held(ledger, projectId, 1_000);
    const relayer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266";
    const counterKey = `relayer_nonce:${relayer.toLowerCase()}`;
    await ledger.relayerNonces.raiseCounter(counterKey, 5);
    const hash = `0x${"ab".repeat(32)}`;
    const [before] = await port.paymentRows(ledger, { ids: [paid] });
    const expected = { txHash: before!.tx_hash, railState: before!.rail_state };
    const stored = await ledger.relayerNonces.store({ counterKey, relayer, tx: { nonce: 5, hash, raw: "0xraw" }, members: [{ paymentId: paid, patch: { txHash: hash }, expected }], at: new Date().toISOString() });
    expect(stored).toEqual({ kind: "stored" });
    expect((await port.relayerTxs(ledger, { paymentId: paid })).map((r) => [r.nonce, r.tx_hash, r.raw_tx])).toEqual([[5, hash, "0xraw"]]);
    expect((await port.relayerTxs(ledger, { txHash: hash })).map((r) => r.payment_id)).toEqual([paid]);
    expect((await port.relayerTxs(ledger, { relayers: [relayer] })).map((r) => r.payment_id)).toEqual([paid]);
    expect(await port.relayerTxs(ledger, { relayers: ["0x0"] })).toEqual([]);

    expect((await port.depositRows(ledger, { txHash: `0x${projectId}` })).map((d) => [d.project_id, d.status, d.amount_micros])).toEqual([[projectId, "credited", 10_000_000]]);
    expect((await port.depositRows(ledger, { projectId, status: "seen" }))).toEqual([]);
    expect((await port.depositRows(ledger, { projectId: [projectId] })).map((d) => d.txn_id)).toEqual([expect.stringMatching(/^txn_/)]);

    await port.putKv(ledger, [{ key: `port:${projectId}:a`, value: "1" }, { key: `port:${projectId}:b`, value: "2" }]);
    await port.putKv(ledger, [{ key: `port:${projectId}:a`, value: "3" }]);
    expect(await port.kvRows(ledger, `port:${projectId}:`)).toEqual([{ key: `port:${projectId}:a`, value: "3" }, { key: `port:${projectId}:b`, value: "2" }]);
    expect((await port.kvRows(ledger)).map((r) => r.key)).toContain(counterKey);

    await port.insertReceivedWebhooks(ledger, [{ id: `msg_${projectId}`, source: "deposits", received_at: "2026-01-01T00:00:00.000Z" }]);
    expect(await ledger.receivedWebhooks.remember(`msg_${projectId}`, "deposits")).toBe(false);

    expect(await port.returnWatchRow(ledger, "port")).toBeUndefined();
    await ledger.returnWatch.claim("port", "proc", 60_000);
    expect(await port.returnWatchRow(ledger, "port")).toMatchObject({ provider: "port", lease_owner: "proc" });

    const quoteId = newId("quo");
    await ledger.quotes.insert({ id: quoteId, project_id: projectId, token_id: "tok_x", url: "https://api.example.com/", method: "GET", body_hash: "", protocol: "x402", scheme: "exact", network: "base", asset: "usdc", pay_to: RECIPIENT, amount_micros: 1, verdict: "would_pay", refusal_code: null, created_at: "2026-01-01T00:00:00.000Z", expires_at: "2026-01-01T00:05:00.000Z" });
    await port.setQuoteExpiry(ledger, quoteId, "2020-01-01T00:05:00.000Z");
    expect((await ledger.quotes.get(projectId, quoteId))!.expires_at).toBe("2020-01-01T00:05:00.000Z");
  });

  test("behavior: webhook events and deliveries are read by project, object and endpoint; an endpoint is disabled and deliveries cleared in place; an audit entry cannot be rewritten", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    const endpointId = newId("whe");
    const actor = { id: "cli:test", name: "test", role: null, ip: null };
    await ledger.webhooks.insertEndpoint({ id: endpointId, project_id: projectId, url: "http://127.0.0.1:9/hook", events: null, secret_box: "sealed", created_at: new Date().toISOString(), disabled_at: null, disabled_reason: null, failing_since: null, deleted_at: null }, actor);
    const paid = await held(ledger, projectId, 1_000);
    await ledger.payments.resolve(paid, "completed");
    const events = await port.webhookEvents(ledger, { projectId });
    expect(events.map((e) => [e.type, e.object_id])).toEqual([
      ["payment.created", paid],
      ["payment.completed", paid],
    ]);
    expect(await port.webhookEvents(ledger, { objectId: paid })).toEqual(events);
    const deliveries = await port.webhookDeliveries(ledger, { projectId });
    expect(deliveries.map((d) => [d.endpoint_id, d.state])).toEqual([
      [endpointId, "pending"],
      [endpointId, "pending"],
    ]);
    expect(await port.webhookDeliveries(ledger, { endpointId })).toEqual(deliveries);
    expect(await port.webhookDeliveries(ledger, { endpointId: "whe_none" })).toEqual([]);

    await port.disableWebhookEndpoint(ledger, endpointId, "2026-01-01T00:00:00.000Z", "failing");
    expect(await ledger.webhooks.getEndpoint(endpointId)).toMatchObject({ disabled_at: "2026-01-01T00:00:00.000Z", disabled_reason: "failing" });
    await port.clearWebhookDeliveries(ledger);
    expect(await port.countRows(ledger, "webhook_deliveries")).toBe(0);

    // The endpoint's creation was audited; the database refuses to change the entry.
    const [entry] = await ledger.audit.list({ projectId, limit: 1 });
    await expect(port.rewriteAuditActor(ledger, entry!.seq, "someone else")).rejects.toThrow(/never changed/);
  });

  test("behavior: evidence records are read, edited, deleted and written back as they were", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    const paid = await held(ledger, projectId, 1_000);
    await ledger.payments.resolve(paid, "completed");
    const rows = await port.evidenceRows(ledger, projectId);
    expect(rows.map((r) => [r.seq, r.kind])).toEqual([
      [1, "created"],
      [2, "completed"],
    ]);
    expect(await port.evidenceRows(ledger, projectId, { paymentId: paid, seqs: [2] })).toEqual([rows[1]]);
    await port.setEvidence(ledger, projectId, 2, { body: "{}" });
    expect((await port.evidenceRows(ledger, projectId, { seqs: [2] }))[0]!.body).toBe("{}");
    await port.setEvidence(ledger, projectId, 2, { body: rows[1]!.body });
    await port.deleteEvidence(ledger, projectId, 2);
    expect(await port.evidenceRows(ledger, projectId)).toEqual([rows[0]]);
    await port.insertEvidence(ledger, rows[1]!);
    expect(await port.evidenceRows(ledger, projectId)).toEqual(rows);
  });

  test("behavior: a table's rows and their number; statements intercepted until restored; a migration replayed", async () => {
    const projectId = await depositFundedProject(ledger, 10_000_000);
    const n = await port.countRows(ledger, "projects");
    expect(n).toBeGreaterThan(0);
    expect((await port.tableRows(ledger, "projects")).map((p) => p.id)).toContain(projectId);
    expect(await port.tableRows(ledger, "projects")).toHaveLength(n);

    const seen: string[] = [];
    const restore = port.interceptQueries(ledger, (query, send) => (seen.push(query.sql), send(query)));
    await ledger.balances.get(projectId);
    restore();
    const count = seen.length;
    expect(count).toBeGreaterThan(0);
    await ledger.balances.get(projectId);
    expect(seen).toHaveLength(count);
    const failing = port.interceptQueries(ledger, () => Promise.reject(new Error("connection reset")));
    try {
      await expect(ledger.balances.get(projectId)).rejects.toThrow("connection reset");
    } finally {
      failing();
    }
    expect((await ledger.balances.get(projectId))!.available_micros).toBe(10_000_000);

    expect(await port.rerunMigration(ledger, "0018_idempotency_keys", ["idempotency_keys"])).toEqual(["0018_idempotency_keys"]);
    expect(await port.countRows(ledger, "idempotency_keys")).toBe(0);
  });

  test("behavior: the port reads the connection of the Ledger it is given: createTestLedger's is the test database's", () => {
    expect(dbOf(ledger)).toBe(t.db);
  });
});
