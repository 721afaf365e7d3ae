import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { insertReceivedWebhooks, insertRelayerTxs, relayerTxs } from "../src/ledger/testing.ts";
import { RelayerNonces } from "../src/ledger/relayerNonces.ts";
import { type TracedPostgres, planNodes, tracedPostgres } from "./support/plans.ts";

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

describe("forgetting signed bytes reads only the rows that still hold them (postgres plans)", () => {
  let pg: TracedPostgres;
  beforeAll(async () => {
    pg = await tracedPostgres();
    // Ten weeks of relayer transactions, a minute apart, the last two days' bytes still kept.
    await pg.pool.query(`insert into relayer_txs (nonce, relayer, payment_id, raw_tx, tx_hash, created_at)
      select g, '0xabc', 'pay_' || g, case when g > 97120 then repeat('ab', 600) else '' end, '0x' || md5(g::text),
        to_char(timestamp '2025-01-01' + g * interval '1 minute', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
      from generate_series(1, 100000) g`);
    await pg.pool.query("vacuum analyze relayer_txs");
  }, 120_000);
  afterAll(async () => pg?.close());

  test("a pass reads the kept rows' index, never the whole table", async () => {
    const nonces = new RelayerNonces(pg.traced, undefined as never);
    pg.issued.length = 0;
    expect(await nonces.forgetSignedBytes("2025-03-10T00:00:00.000Z", 500)).toBe(500);
    const [statement] = pg.issued.splice(0);
    const nodes = planNodes(await pg.explain(statement!)).map(({ node }) => node).filter((n) => n["Relation Name"] === "relayer_txs" && n["Node Type"] !== "ModifyTable");
    expect(nodes.length).toBeGreaterThan(0);
    for (const n of nodes) {
      expect(n["Node Type"], statement!.sql).toMatch(/^Index (Only )?Scan$/);
      expect(n["Index Name"]).toBe("relayer_txs_kept");
    }
  });
});
