// A transaction's status history in the console shows the transitions its webhooks report, on real SQLite
// and PostgreSQL: both read what the ledger's triggers record in the transaction of each status change,
// whether or not the project has a webhook endpoint.
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { consoleBackend } from "../src/http/console.ts";
import { newId } from "../src/ids.ts";
import { createWebhookEndpoint } from "../src/services/webhooks/endpoints.ts";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { usdcPayment } from "./support/holds.ts";
import { depositRows, webhookEvents } from "../src/ledger/testing.ts";

const KEY = new Uint8Array(32).fill(5);

describe.each(dialects)("console status history (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t?.close());

  async function fundedProject(withEndpoint: boolean) {
    const ledger = t.ctx.ledger;
    const p = await ledger.projects.create({ name: "p", plan: "free" });
    if (withEndpoint) await createWebhookEndpoint({ ledger, clock: t.ctx.clock, newId, mode: "sandbox", secretKey: () => KEY }, { projectId: p.id, url: "http://127.0.0.1:9/x" });
    const key = { chain: "base", txHash: `0x${p.id}`, logIndex: 0 };
    await ledger.deposits.recordSeen({ ...key, projectId: p.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 1_000_000_000, blockNumber: 1, blockHash: "0xh" });
    await ledger.deposits.credit(key);
    return p.id;
  }
  const events = (projectId: string, objectId: string) => webhookEvents(t.ctx.ledger, { projectId, objectId });
  const reported = async (projectId: string, objectId: string) => (await events(projectId, objectId)).map((e) => e.status);

  test("behavior: a reversed payment's history is pending, processing, completed, reversed, as its webhooks report, with or without an endpoint", async () => {
    const ledger = t.ctx.ledger;
    const backend = consoleBackend(t.ctx, {});
    for (const withEndpoint of [true, false]) {
      const projectId = await fundedProject(withEndpoint);
      const a = await ledger.payments.hold(usdcPayment(projectId, 1_000, 20));
      if (a.kind !== "held") throw new Error(a.kind);
      await ledger.payments.updatePayment(a.payment.id, { status: "processing" });
      await ledger.payments.resolve(a.payment.id, "completed", { txHash: "0xabc" });
      await ledger.payments.reverse(a.payment.id, "R01 insufficient funds");
      const history = await backend.transactionHistory(projectId, a.payment.id);
      expect(history.map((h) => h.status)).toEqual(["pending", "processing", "completed", "reversed"]);
      expect(history.map((h) => h.text)).toEqual([expect.stringMatching(/^Created; \$0\.00 held/), "Sent on-chain: 0xabc", "Completed", expect.stringMatching(/^Reversed.*R01 insufficient funds/)]);
      if (withEndpoint) expect(await reported(projectId, a.payment.id)).toEqual(history.map((h) => h.status));

      // A payment that starts processing and fails: created as processing, processing, failed.
      const b = await ledger.payments.hold(usdcPayment(projectId, 2_000, 40, { status: "processing" }));
      if (b.kind !== "held") throw new Error(b.kind);
      await ledger.payments.resolve(b.payment.id, "failed", { failureCode: "onchain_reverted", failureReason: "reverted" });
      const failed = await backend.transactionHistory(projectId, b.payment.id);
      expect(failed.map((h) => h.status)).toEqual(["processing", "processing", "failed"]);
      if (withEndpoint) expect(await reported(projectId, b.payment.id)).toEqual(failed.map((h) => h.status));

      // A deposit: seen (its transaction pending), then credited (completed), as deposit.pending and deposit.credited report.
      const deposit = (await depositRows(ledger, { projectId }))[0]!.txn_id!;
      const credited = await backend.transactionHistory(projectId, deposit);
      expect(credited.map((h) => [h.status, h.text])).toEqual([["pending", expect.stringMatching(/^Deposit seen/)], ["completed", "Deposit confirmed on-chain and credited"]]);
      if (withEndpoint) expect((await events(projectId, deposit)).map((e) => e.type)).toEqual(["deposit.pending", "deposit.credited"]);
    }
  });
});
