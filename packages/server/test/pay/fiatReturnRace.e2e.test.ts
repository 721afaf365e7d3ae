// A bank payout returned while its payment is still being completed (the fee sweep in flight): the
// provider's webhook finds the payment open and only wakes the worker, which had read the payout as
// `completed` just before. The return must still reach the ledger (found by the fault suite: the
// payment stayed `completed` and the ledger showed money the off-ramp had refunded on-chain).
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import type { FiatProvider, Payout } from "../../src/rails/fiat/provider.ts";
import { SANDBOX_RETURN_ACCOUNT } from "../../src/rails/fiat/sandboxProvider.ts";
import { startTestServer, type TestServer } from "../../src/testing/harness.ts";
import { createPgSchema, dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";
import { paymentRows } from "../../src/ledger/testing.ts";

describe.each(dialects)("fiat: a return that races the completion (%s)", (dialect) => {
  let s: TestServer;
  let pg: Awaited<ReturnType<typeof createPgSchema>> | undefined;
  beforeAll(async () => {
    pg = dialect === "postgres" ? await createPgSchema() : undefined;
    // Inline settlement: the rail and the ticking off-ramp are this process's objects. A payout completes
    // after 3 s and would be returned 3 s later: the test returns it at once, when the worker has read it.
    s = await startTestServer({ database: dialect, databaseUrl: pg?.url, env: { SETTLEMENT: "inline", FIAT_SANDBOX_DELAY_MS: "3000", RATE_LIMIT_PER_MINUTE: "100000" } });
    await s.fund(50_000_000n);
  });
  afterAll(async () => {
    await s?.stop();
    await pg?.drop();
  });

  test("behavior: the payment ends reversed and credited back, though the worker last read the payout as completed", async () => {
    const ledger = s.server.ctx.ledger;
    const provider = s.server.ctx.rails!.fiatProvider as FiatProvider;
    const read = provider.getPayout.bind(provider);
    // The payout as the worker first saw it completed. Until the payment leaves `processing`, the worker
    // keeps getting that answer, while the provider meanwhile returns the payout and sends its webhook:
    // the interleaving of a return that lands between the worker's read and its completion.
    let stale: Payout | undefined;
    provider.getPayout = async (id) => {
      const now = await read(id);
      if (!stale && now?.status === "completed") {
        stale = now;
        const key = `sandbox_payout:${id}`;
        const stored = JSON.parse((await ledger.kv.get(key))!) as { returnAt: number | null; delivered: string | null };
        await ledger.kv.set(key, JSON.stringify({ ...stored, returnAt: 0 }));
        // The off-ramp's loop refunds the USDC and delivers `payout.returned` to our webhook.
        await poll("the return's webhook", async () => ((JSON.parse((await ledger.kv.get(key))!) as { delivered: string | null }).delivered === "returned" ? true : undefined), 20_000);
      }
      const [payment] = await paymentRows(ledger, { providerRef: id });
      return stale && payment?.status === "processing" ? stale : now;
    };
    try {
      const res = await fetch(`${s.baseUrl}/v1/pay`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
        body: JSON.stringify({ recipient: { name: "Returns", account_number: SANDBOX_RETURN_ACCOUNT, routing_number: "021000021" }, amount_usd: 4 }),
      });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      const final = await poll(`payment ${id} reversed`, async () => {
        const p = await ledger.payments.getPayment(id);
        return p?.status === "reversed" ? p : undefined;
      }, 30_000).catch(async (err: Error) => {
        throw new Error(`${err.message}: it is ${(await ledger.payments.getPayment(id))?.status}`);
      });
      expect(stale).toBeDefined();
      expect(final.failureReason).toMatch(/^R01/);
      expect((await ledger.balances.get(s.projectId))!.held_micros).toBe(0);
    } finally {
      provider.getPayout = read;
    }
  });
});
