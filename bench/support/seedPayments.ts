/**
 * Seeds one project with N payments directly in SQL (a seed, not the API), spread over the 365 days up to
 * now among the given agents (tokens), on every rail and a few dozen counterparties, 5% failed. The day
 * counters behind the Spend page (migration 0032) are written by their own triggers as the rows go in, as
 * they are in service; the payment triggers that write events, history and evidence are set aside during
 * the load (they would only slow it and the page does not read them) and put back after. SQLite only.
 */
import SQLite from "better-sqlite3";
import { newId } from "../../packages/server/src/ids.ts";

const ROWS_PER_TRANSACTION = 50_000;
const DAY_MS = 86_400_000;
const MERCHANTS = ["api.weather.example", "search.example", "maps.example", "llm-gateway.example", "news.example", "images.example", "translate.example", "geo.example"];
const PAYEES = ["Acme Hosting LLC", "Data Vendor Inc", "Contractor payout", "Office supplies"];

export function seedPayments(sqlitePath: string, projectId: string, tokenIds: string[], rows: number, now = new Date()): { ms: number } {
  const started = performance.now();
  const db = new SQLite(sqlitePath);
  try {
    db.pragma("synchronous = OFF");
    const setAside = db.prepare("select name, sql from sqlite_master where type = 'trigger' and tbl_name = 'payments' and name not like 'spend_days_%'").all() as { name: string; sql: string }[];
    for (const t of setAside) db.exec(`drop trigger ${t.name}`);
    const insert = db.prepare(
      `insert into payments (id, project_id, rail, status, amount_units, fee_units, amount_micros, fee_micros, currency, recipient, recipient_json, fee_txn_id, next_attempt_at, attempts, created_at, updated_at, token_id)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?)`,
    );
    let seed = 20_251_126;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const startMs = now.getTime() - 365 * DAY_MS;
    const load = db.transaction((from: number, to: number) => {
      for (let i = from; i < to; i++) {
        const at = new Date(startMs + Math.floor(((i + random()) / rows) * 365 * DAY_MS)).toISOString();
        const pick = random();
        const token = tokenIds[i % tokenIds.length]!;
        const status = random() < 0.05 ? "failed" : "completed";
        if (pick < 0.7) {
          const amount = 1_000 + Math.floor(random() * 1_999_000);
          const m = MERCHANTS[Math.floor(random() * MERCHANTS.length)]!;
          insert.run(newId("txn"), projectId, "x402", status, amount, 1_000, amount, 1_000, "usdc", `https://${m}/v1/call`, null, newId("txn"), at, at, at, token);
        } else if (pick < 0.9) {
          const amount = (1 + Math.floor(random() * 99)) * 1_000_000;
          const to = `0x${(Math.floor(random() * 24) + 1).toString(16).padStart(40, "0")}`;
          insert.run(newId("txn"), projectId, "usdc_transfer", status, amount, amount / 100, amount, amount / 100, "usdc", to, null, newId("txn"), at, at, at, token);
        } else {
          const cents = 100 + Math.floor(random() * 49_900);
          const p = Math.floor(random() * PAYEES.length);
          const bank = JSON.stringify({ name: PAYEES[p], routing_number: "021000021", account_number: `****${String(1000 + p * 1111).slice(-4)}` });
          insert.run(newId("txn"), projectId, "fiat", status, cents, 25, cents * 10_000, 250_000, "usd", PAYEES[p], bank, newId("txn"), at, at, at, token);
        }
      }
    });
    for (let from = 0; from < rows; from += ROWS_PER_TRANSACTION) load(from, Math.min(rows, from + ROWS_PER_TRANSACTION));
    for (const t of setAside) db.exec(t.sql);
    db.exec("analyze");
    db.pragma("wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
  return { ms: performance.now() - started };
}
