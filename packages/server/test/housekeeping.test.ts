import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { insertReceivedWebhooks } from "../src/ledger/testing.ts";

describe.each(dialects)("webhook ids are forgotten once past any replay window (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t.close());

  test("ids older than the cut-off go, in bounded batches; recent ones still refuse a replay", async () => {
    // Five deliveries from long ago, as their rows would be.
    await insertReceivedWebhooks(t.ctx.ledger, Array.from({ length: 5 }, (_, i) => ({ id: `msg_old_${i}`, source: "deposits", received_at: "2026-01-01T00:00:00.000Z" })));
    expect(await t.ctx.ledger.receivedWebhooks.remember("msg_new", "deposits")).toBe(true);
    const cutoff = new Date(Date.now() - 24 * 3_600_000).toISOString();
    expect(await t.ctx.ledger.receivedWebhooks.prune(cutoff, 3)).toBe(3);
    expect(await t.ctx.ledger.receivedWebhooks.prune(cutoff, 3)).toBe(2);
    expect(await t.ctx.ledger.receivedWebhooks.prune(cutoff, 3)).toBe(0);
    expect(await t.ctx.ledger.receivedWebhooks.remember("msg_new", "deposits")).toBe(false);
  });
});
