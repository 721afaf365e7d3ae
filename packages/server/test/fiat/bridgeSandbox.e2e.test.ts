/**
 * FIAT_PROVIDER=bridge in the sandbox: the server starts the Bridge stand-in on its local chain and
 * runs the real Bridge adapter against it, with no Bridge settings to give.
 */
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestServer, startTestServer } from "../../src/testing/harness.ts";
import { poll } from "../support/poll.ts";
import { transactionRow } from "../../src/ledger/testing.ts";

describe("sandbox with FIAT_PROVIDER=bridge", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ env: { FIAT_PROVIDER: "bridge" } });
    await s.fund(50_000_000n);
  }, 300_000);
  afterAll(async () => {
    await s?.stop();
  });

  test("a bank payment goes through the Bridge adapter and completes", async () => {
    const res = await fetch(`${s.baseUrl}/v1/pay`, {
      method: "POST",
      headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
      body: JSON.stringify({ recipient: { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" }, amount_usd: 2.5 }),
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as { id: string; rail: string; estimated_arrival: string };
    expect(body.rail).toBe("fiat");
    expect(body.estimated_arrival).toBe("1-3 business days");
    const txn = (await transactionRow(s.server.ctx.ledger, body.id))!;
    const p = await poll("the payment to complete", async () => {
      const row = await s.server.ctx.ledger.payments.getPayment(txn.payment_id!);
      return row && ["completed", "failed"].includes(row.status) ? row : undefined;
    });
    expect(p.status).toBe("completed");
    expect(p.providerRef).toMatch(/^transfer_/);
  });
});
