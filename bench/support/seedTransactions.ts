/**
 * Seeds one project with N transactions directly in SQL (a seed, not the API): deposits and
 * payments with their fee rows, a realistic mix of types, statuses and currencies, created_at
 * strictly increasing like a ledger that grew over months. The balance row is set to match, with
 * `tx_count` = N, so `total_count` is what the API would report. The mix, amounts and times come
 * from a seeded PRNG, so every run loads the same history (ids stay random, as the service makes them).
 */
import SQLite from "better-sqlite3";
import pg from "pg";
import { newId } from "../../packages/server/src/ids.ts";
import type { BenchContext } from "./benchContext.ts";
import { dbOf } from "../../packages/server/src/ledger/connection.ts";

/** Rows per INSERT statement (Postgres) and per transaction (both): big enough to be fast, small enough to bound memory. */
const ROWS_PER_STATEMENT = 5_000;
const ROWS_PER_TRANSACTION = 50_000;
const MICROS_PER_CENT = 10_000;

type Row = [
  id: string,
  projectId: string,
  paymentId: string | null,
  type: string,
  status: string,
  amount: number,
  currency: "usd" | "usdc",
  description: string | null,
  merchantName: string | null,
  createdAt: string,
  completedAt: string | null,
];

export type SeedResult = { rows: number; ms: number; rowsPerSec: number; balance: BalanceTotals };
type BalanceTotals = { availableMicros: number; heldMicros: number; fundedMicros: number; spentMicros: number; txCount: number };

export async function seedTransactions(bench: BenchContext, projectId: string, rows: number, onProgress?: (done: number) => void): Promise<SeedResult> {
  const started = performance.now();
  const generator = new LedgerHistory(projectId, rows);
  if (bench.dialect === "sqlite") seedSqlite(bench.sqlitePath!, generator, onProgress);
  else await seedPostgres(bench.postgresUrl!, generator, onProgress);
  const balance = generator.totals();
  if (balance.txCount !== rows) throw new Error(`seed produced ${balance.txCount} rows, wanted ${rows}`);
  await dbOf(bench.ctx.ledger)
    .updateTable("balances")
    .set({ available_micros: balance.availableMicros, held_micros: balance.heldMicros, total_funded_micros: balance.fundedMicros, total_spent_micros: balance.spentMicros, tx_count: balance.txCount })
    .where("project_id", "=", projectId)
    .execute();
  const ms = performance.now() - started;
  return { rows, ms, rowsPerSec: rows / (ms / 1000), balance };
}

function seedSqlite(path: string, history: LedgerHistory, onProgress?: (done: number) => void): void {
  // A second connection for the bulk load only; the service's own connection keeps synchronous=FULL.
  const db = new SQLite(path);
  try {
    db.pragma("synchronous = OFF");
    const insert = db.prepare(
      "insert into transactions (id, project_id, payment_id, type, status, amount, currency, description, merchant_name, created_at, completed_at) values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    );
    const insertAll = db.transaction((batch: Row[]) => {
      for (const row of batch) insert.run(row);
    });
    for (let batch = history.next(ROWS_PER_TRANSACTION); batch.length; batch = history.next(ROWS_PER_TRANSACTION)) {
      insertAll(batch);
      onProgress?.(history.produced);
    }
    // Positions 1..N in recording order, as the ledger assigns them (migration 0002).
    db.exec(POSITIONS_SQL);
    // Readers should find the rows in the main file, not in a 200 MB write-ahead log.
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}

async function seedPostgres(url: string, history: LedgerHistory, onProgress?: (done: number) => void): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    // One statement per 5,000 rows: ten arrays, unnested into rows server-side.
    const text =
      "insert into transactions (id, project_id, payment_id, type, status, amount, currency, description, merchant_name, created_at, completed_at) " +
      "select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])";
    for (let batch = history.next(ROWS_PER_TRANSACTION); batch.length; batch = history.next(ROWS_PER_TRANSACTION)) {
      await client.query("begin");
      for (let i = 0; i < batch.length; i += ROWS_PER_STATEMENT) {
        const part = batch.slice(i, i + ROWS_PER_STATEMENT);
        await client.query(text, Array.from({ length: 11 }, (_, col) => part.map((r) => r[col])));
      }
      await client.query("commit");
      onProgress?.(history.produced);
    }
    await client.query(POSITIONS_SQL);
    // What autovacuum would have done by the time a table holds a million rows: fresh statistics
    // for the planner and a visibility map.
    await client.query("vacuum analyze transactions");
    // The seed's pages written out now rather than by a checkpoint during the measurements (on this scale, a
    // minute of disk writes). Needs a superuser or pg_checkpoint; without either, the measurements share it.
    await client.query("checkpoint").catch(() => undefined);
  } finally {
    await client.end();
  }
}

/** The same numbering as `backfillTransactionPositions` (packages/server/src/ledger/migrations.ts). */
const POSITIONS_SQL =
  "update transactions set pos = r.rn from (select seq, row_number() over (partition by project_id order by created_at, seq) as rn from transactions) as r where transactions.seq = r.seq and transactions.pos is null";

const MERCHANTS = ["api.weather.example", "search.example", "maps.example", "llm-gateway.example", "news.example", "images.example", "translate.example", "geo.example"];
const PATHS = ["/v1/forecast", "/v1/query", "/v1/route", "/v1/complete", "/v1/headlines", "/v1/generate", "/v1/translate", "/v1/lookup"];
const FIAT_PAYEES = ["Acme Hosting LLC", "Data Vendor Inc", "Contractor payout", "Office supplies"];
const START_MS = Date.parse("2025-01-01T00:00:00.000Z");

/**
 * A ledger's history, produced in batches. Per event: 8% USDC deposits (one row), 60% x402
 * payments, 17% USDC transfers, 15% fiat payments (USD cents); each payment is two rows, its
 * platform fee and itself, at the same instant (the fee first, as `Ledger.hold` writes them).
 * Statuses: mostly completed, some failed, fiat sometimes reversed; the newest payments pending or
 * processing.
 */
class LedgerHistory {
  produced = 0;
  private nowMs = START_MS;
  private random = mulberry32(20_250_101);
  private fundedMicros = 0;
  private spentMicros = 0;
  private heldMicros = 0;

  constructor(
    private readonly projectId: string,
    private readonly total: number,
  ) {}

  next(max: number): Row[] {
    const out: Row[] = [];
    while (out.length < max - 1 && this.produced < this.total) {
      const rows = this.event(this.total - this.produced);
      out.push(...rows);
      this.produced += rows.length;
    }
    return out;
  }

  totals(): BalanceTotals {
    return { availableMicros: this.fundedMicros - this.spentMicros, heldMicros: this.heldMicros, fundedMicros: this.fundedMicros, spentMicros: this.spentMicros, txCount: this.produced };
  }

  private event(remaining: number): Row[] {
    this.nowMs += 1_000 + Math.floor(this.random() * 59_000);
    const at = new Date(this.nowMs).toISOString();
    const pick = this.random();
    // A payment needs two rows; with one row left, the history ends on a deposit.
    if (pick < 0.08 || remaining < 2) return [this.deposit(at)];
    const rail = pick < 0.68 ? "x402_payment" : pick < 0.85 ? "usdc_transfer" : "payment";
    return this.payment(rail, at, remaining <= 400);
  }

  private deposit(at: string): Row {
    const amountMicros = (100 + Math.floor(this.random() * 4_900)) * 1_000_000;
    this.fundedMicros += amountMicros;
    const from = `0x${Math.floor(this.random() * 2 ** 48).toString(16).padStart(12, "0")}${"0".repeat(28)}`;
    return [newId("txn"), this.projectId, null, "usdc_fund", "completed", amountMicros, "usdc", `USDC deposit from ${from}`, null, at, at];
  }

  private payment(type: "x402_payment" | "usdc_transfer" | "payment", at: string, newest: boolean): Row[] {
    const fiat = type === "payment";
    const currency = fiat ? "usd" : "usdc";
    const amount =
      type === "x402_payment" ? 1_000 + Math.floor(this.random() * 1_999_000) // 0.001–2 USDC
      : type === "usdc_transfer" ? (1 + Math.floor(this.random() * 499)) * 1_000_000 // 1–500 USDC
      : 100 + Math.floor(this.random() * 49_900); // 1–500 USD in cents
    const fee = fiat ? 25 + Math.floor(amount / 100) : Math.max(1_000, Math.floor(amount / 100));
    const status = this.status(fiat, newest);
    const totalMicros = (amount + fee) * (fiat ? MICROS_PER_CENT : 1);
    if (status !== "failed" && status !== "reversed") this.spentMicros += totalMicros;
    if (status === "pending" || status === "processing") this.heldMicros += totalMicros;
    const i = Math.floor(this.random() * MERCHANTS.length);
    const description = fiat ? `Invoice ${Math.floor(this.random() * 1e6)}` : type === "x402_payment" ? `GET https://${MERCHANTS[i]}${PATHS[i]}` : "Transfer to supplier";
    const merchant = fiat ? FIAT_PAYEES[i % FIAT_PAYEES.length]! : type === "x402_payment" ? MERCHANTS[i]! : null;
    const completedAt = status === "completed" || status === "reversed" ? new Date(this.nowMs + (fiat ? 86_400_000 : 2_000)).toISOString() : null;
    const id = newId("txn");
    return [
      [newId("txn"), this.projectId, id, "platform_fee", status, fee, currency, `Fee: ${description}`, null, at, completedAt],
      [id, this.projectId, id, type, status, amount, currency, description, merchant, at, completedAt],
    ];
  }

  private status(fiat: boolean, newest: boolean): string {
    const r = this.random();
    if (newest && r < 0.5) return r < 0.3 ? "pending" : "processing";
    if (r < 0.05) return "failed";
    if (fiat && r < 0.07) return "reversed";
    return "completed";
  }
}

/** A small seeded PRNG: the same seed gives the same ledger on every run. */
function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
