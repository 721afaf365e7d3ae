// The paid reply answers before its record (decisions.md, "The paid reply answers before its record"). The
// settlement the reply reports is proven on-chain and recorded with the reply right after the answer, by the
// request's own process. While it is not written, the payment stays leased to its request: a repeat of its key in the same
// process waits for the record and gets the payment (elsewhere it is told to retry), never a second payment. A
// graceful stop waits for it. Each case holds the database's
// write lock from the moment the merchant answers, so that the record is provably still to be written when the
// case acts. The loops that write on their own (the worker, the deposit watcher, webhooks) are slowed down: on SQLite
// their writes would wait for the test's lock on this same thread.
import { randomBytes } from "node:crypto";
import Database from "better-sqlite3";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { loadConfig } from "../../src/config.ts";
import { openLedger } from "../../src/ledger/open.ts";
import { paymentRows } from "../../src/ledger/testing.ts";
import { type Reply, decodePaymentHeader, startHandBuiltTarget, v2PaymentRequired } from "./support/handBuiltTarget.ts";
import { type X402World, randomAddress, startX402World } from "./support/x402World.ts";

const PRICE = 10_000n;
const QUIET_LOOPS = { WORKER_INTERVAL_MS: "60000", WATCHER_INTERVAL_MS: "60000", WEBHOOK_INTERVAL_MS: "60000" };

/** Holds the database's write lock (SQLite) or the payments table (PostgreSQL) until released. */
type WriteLock = { release(): Promise<void> };

async function lockWrites(w: X402World): Promise<WriteLock> {
  const url = w.server.server.ctx.config.databaseUrl;
  if (!url) {
    const db = new Database(w.server.server.ctx.config.sqlitePath);
    db.exec("begin immediate");
    return { release: async () => void (db.exec("rollback"), db.close()) };
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query("begin");
  await client.query("lock table payments in exclusive mode");
  return { release: async () => void (await client.query("rollback"), await client.end()) };
}

/** A merchant that settles through x402's facilitator, then takes the write lock and answers. */
async function startLockingMerchant(w: X402World): Promise<{ url: string; lock: () => WriteLock | undefined; close(): Promise<void> }> {
  const payTo = randomAddress();
  const requirement = { scheme: "exact", network: "eip155:8453", amount: String(PRICE), asset: w.usdc, payTo, maxTimeoutSeconds: 60, extra: { name: "USD Coin", version: "2" } };
  let held: WriteLock | undefined;
  const target = await startHandBuiltTarget(async (req): Promise<Reply> => {
    if (!req.paymentHeader) return v2PaymentRequired([requirement]);
    const response = await fetch(`${w.facilitator.url}/settle`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ x402Version: 2, paymentPayload: decodePaymentHeader(req.paymentHeader), paymentRequirements: requirement }),
    });
    const settled = (await response.json()) as { success: boolean; transaction: string };
    held = await lockWrites(w);
    return { status: 200, headers: { "payment-response": Buffer.from(JSON.stringify({ ...settled, network: "eip155:8453" })).toString("base64") }, body: '{"data":"paid"}' };
  });
  return { url: `${target.url}/paid`, lock: () => held, close: () => target.close() };
}

/** The transaction the merchant's reply reports (its PAYMENT-RESPONSE header), which the record must prove and hold. */
function reportedTx(answer: { body: Record<string, unknown> }): string {
  const headers = (answer.body.response as { headers: Record<string, string> }).headers;
  return (JSON.parse(Buffer.from(headers["payment-response"]!, "base64").toString()) as { transaction: string }).transaction;
}

for (const database of ["sqlite", "postgres"] as const) {
  describe(`${database}: the paid reply answers before its record`, () => {
    let w: X402World;
    beforeAll(async () => {
      w = await startX402World({ database, fundMicros: 5_000_000n, env: QUIET_LOOPS });
    });
    afterAll(async () => {
      await w?.stop();
    });

    test("behavior: the answer carries the reply while the proof and the record wait; a repeat of the key waits for the record and gets the payment with the proven settlement; the record holds the answer's reply", async () => {
      const merchant = await startLockingMerchant(w);
      try {
        const key = `k-${randomBytes(6).toString("hex")}`;
        const answer = await w.post("/v1/pay", { recipient: merchant.url, max_amount_usdc: Number(PRICE), idempotency_key: key });
        expect(answer.status).toBe(200);
        expect(answer.body.status).toBe("processing");
        // The settlement is the merchant's word until proven: the answer's tx_hash waits for the record.
        expect(answer.body.tx_hash).toBeNull();
        const settlementTx = reportedTx(answer);
        expect(settlementTx).toMatch(/^0x[0-9a-f]{64}$/);
        expect((answer.body.response as { body: string }).body).toBe('{"data":"paid"}');
        const id = answer.body.id as string;
        // Not yet recorded: the write lock is still held.
        const [before] = await paymentRows(w.ctx.ledger, { ids: [id] });
        expect(before!.response_json).toBeNull();
        expect(before!.tx_hash).toBeNull();
        // A repeat sent now waits for the record (the merchant is not asked again) rather than being told to retry.
        let repeatAnswered = false;
        const repeating = w.post("/v1/pay", { recipient: merchant.url, max_amount_usdc: Number(PRICE), idempotency_key: key }).then((r) => ((repeatAnswered = true), r));
        await new Promise((r) => setTimeout(r, 300));
        expect(repeatAnswered).toBe(false);
        await merchant.lock()!.release();
        const repeat = await repeating;
        expect(repeat.status).toBe(200);
        expect(repeat.body.id).toBe(id);
        expect(repeat.body.tx_hash).toBe(settlementTx);
        expect(repeat.body.response).toEqual(answer.body.response);
        expect(await w.settle(id)).toBe("completed");
        const shown = await w.get(`/v1/transactions/${id}`);
        expect(shown.body.tx_hash).toBe(settlementTx);
        // The same key now answers the recorded payment.
        const replay = await w.post("/v1/pay", { recipient: merchant.url, max_amount_usdc: Number(PRICE), idempotency_key: key });
        expect(replay.status).toBe(200);
        expect(replay.body.id).toBe(id);
        expect(replay.body.response).toEqual(answer.body.response);
      } finally {
        await merchant.lock()?.release().catch(() => undefined);
        await merchant.close();
      }
    });
  });
}

describe("sqlite: a graceful stop waits for the record of an answered payment", () => {
  test("behavior: stopped while the record waits for the write lock, the payment is stored with its reply and settlement", async () => {
    const w = await startX402World({ fundMicros: 5_000_000n, env: QUIET_LOOPS });
    const merchant = await startLockingMerchant(w);
    const dataDir = w.server.dataDir;
    let stopped = false;
    try {
      const answer = await w.post("/v1/pay", { recipient: merchant.url, max_amount_usdc: Number(PRICE) });
      expect(answer.status).toBe(200);
      const id = answer.body.id as string;
      const stopping = w.server.server.stop().then(() => (stopped = true));
      await new Promise((r) => setTimeout(r, 500));
      // The stop waits for the record, which waits for the lock.
      expect(stopped).toBe(false);
      await merchant.lock()!.release();
      await stopping;
      const { ledger, opened } = await openLedger(loadConfig({ AGENTWALLET_DATA_DIR: dataDir }, { port: 0, host: "127.0.0.1" }));
      try {
        const [row] = await paymentRows(ledger, { ids: [id] });
        expect(row!.tx_hash).toBe(reportedTx(answer));
        expect(JSON.parse(row!.response_json!)).toEqual(answer.body.response);
      } finally {
        await opened.close();
      }
    } finally {
      await merchant.lock()?.release().catch(() => undefined);
      await merchant.close();
      await w.stop().catch(() => undefined);
    }
  });
});
