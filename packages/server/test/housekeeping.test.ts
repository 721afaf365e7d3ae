import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { insertReceivedWebhooks, insertRelayerTxs, relayerTxs } from "../src/ledger/testing.ts";

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

describe.each(dialects)("relayer transactions' signed bytes are forgotten once past any use (%s)", (dialect) => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext(dialect);
  });
  afterAll(async () => t.close());

  test("bytes stored before the cut-off go, oldest first in bounded batches; the rows and newer bytes stay", async () => {
    const relayer = "0x0000000000000000000000000000000000000042";
    const row = (nonce: number, created_at: string) => ({ relayer, nonce, payment_id: `pay_${nonce}`, raw_tx: `0x02f8${"ab".repeat(100 + nonce)}`, tx_hash: `0x${nonce.toString(16).padStart(64, "0")}`, created_at });
    const rows = [row(0, "2026-01-01T00:00:00.000Z"), row(1, "2026-01-01T00:00:01.000Z"), row(2, "2026-01-02T00:00:00.000Z"), row(3, new Date().toISOString())];
    await insertRelayerTxs(t.ctx.ledger, rows);
    const cutoff = new Date(Date.now() - 24 * 3_600_000).toISOString();
    const nonces = t.ctx.ledger.relayerNonces;
    expect(await nonces.forgetSignedBytes(cutoff, 2)).toBe(2);
    // The oldest two first.
    expect((await nonces.transactionAt(relayer, 0))?.raw_tx).toBeNull();
    expect((await nonces.transactionAt(relayer, 1))?.raw_tx).toBeNull();
    expect((await nonces.transactionAt(relayer, 2))?.raw_tx).toBe(rows[2]!.raw_tx);
    expect(await nonces.forgetSignedBytes(cutoff, 2)).toBe(1);
    expect(await nonces.forgetSignedBytes(cutoff, 2)).toBe(0);
    expect(await nonces.transactionByHash(rows[2]!.tx_hash)).toEqual({ raw_tx: null, nonce: 2 });
    // Stored within the day: kept for re-broadcast.
    expect(await nonces.transactionByHash(rows[3]!.tx_hash)).toEqual({ raw_tx: rows[3]!.raw_tx, nonce: 3 });
    // Every row stays: its nonce, hash and payment are still what gap repair and the lost-leg checks read.
    expect((await relayerTxs(t.ctx.ledger, { relayers: [relayer] })).map((r) => [Number(r.nonce), r.tx_hash, r.payment_id])).toEqual(rows.map((r) => [r.nonce, r.tx_hash, r.payment_id]));
  });
});
