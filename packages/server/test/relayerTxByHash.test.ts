// A stored relayer transaction is found by its hash through an index, on both databases: the read a payment makes
// when the node has lost its transaction (onchainLeg.checkRelayed) must not scan every signed transaction kept.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestLedger, createTestLedger, dialects } from "./support/db.ts";

const ROWS = 3_000;
const hashOf = (n: number) => `0x${n.toString(16).padStart(64, "0")}`;

describe.each(dialects)("relayer transactions by hash (%s)", (dialect) => {
  let db: TestLedger;
  beforeAll(async () => {
    db = await createTestLedger(dialect);
    // Batches as the relayer stores them: a nonce, its first payment, the signed bytes (shortened here) and their hash.
    const raw = `0x${"ab".repeat(2_000)}`;
    if (dialect === "sqlite") await sql`with recursive n(v) as (select 1 union all select v + 1 from n where v < ${ROWS}) insert into relayer_txs (nonce, relayer, payment_id, raw_tx, tx_hash, created_at) select v, '0xrelayer', 'pay_' || v, ${raw}, '0x' || printf('%064x', v), '2026-11-27T00:00:00.000Z' from n`.execute(db.db);
    else await sql`insert into relayer_txs (nonce, relayer, payment_id, raw_tx, tx_hash, created_at) select g, '0xrelayer', 'pay_' || g, ${raw}, '0x' || lpad(to_hex(g), 64, '0'), '2026-11-27T00:00:00.000Z' from generate_series(1, ${ROWS}::int) g`.execute(db.db);
    await sql`analyze`.execute(db.db);
  });
  afterAll(() => db?.drop());

  test("behavior: the read finds the transaction by its hash, and its plan reads the hash's index", async () => {
    expect(await db.ledger.relayerNonces.transactionByHash(hashOf(1_234))).toMatchObject({ nonce: 1_234 });
    expect(await db.ledger.relayerNonces.transactionByHash(hashOf(ROWS + 1))).toBeUndefined();
    const query = db.db.selectFrom("relayer_txs").select(["raw_tx", "nonce"]).where("tx_hash", "=", hashOf(1_234)).compile();
    if (dialect === "sqlite") {
      const plan = (await sql.raw(`explain query plan ${query.sql}`.replace("?", `'${hashOf(1_234)}'`)).execute(db.db)).rows as { detail: string }[];
      expect(plan.map((r) => r.detail).join("; ")).toContain("USING INDEX relayer_txs_tx_hash");
    } else {
      const plan = (await sql.raw(`explain ${query.sql}`.replace("$1", `'${hashOf(1_234)}'`)).execute(db.db)).rows as { "QUERY PLAN": string }[];
      expect(plan.map((r) => r["QUERY PLAN"]).join("\n")).toMatch(/Index Scan using relayer_txs_tx_hash|Bitmap Index Scan on relayer_txs_tx_hash/);
    }
  });
});
