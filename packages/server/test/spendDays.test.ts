// The day counters behind the console's Spend page (migration 0032, ledger/spendDays.ts) equal the payments
// they count after holds by several tokens on every rail, some concurrent, then failures, reversals and
// completions; the Spend page's figures for an agent agree with its `GET /v1/limits` windows (a window with
// its counter row and one without); and the migration counts the payments a database already holds.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { newId } from "../src/ids.ts";
import { migrateToLatest } from "../src/ledger/migrations.ts";
import type { Ledger } from "../src/ledger/store.ts";
import type { SpendingControls } from "../src/domain/spending.ts";
import { spendReport } from "../src/services/console/spend.ts";
import { getTokenLimits } from "../src/services/spendingControls.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "./support/db.ts";
import { usdcPayment } from "./support/holds.ts";

const ADDRESS = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const DAILY_LIMIT: SpendingControls = { limits: [{ interval: "daily", amountMicros: 500_000_000 }, { interval: "monthly", amountMicros: 900_000_000 }], allowedRecipients: null, blockedRecipients: [], allowedRails: null, approvalAboveMicros: null };

/** What a counter's key is for a payment, computed here from the row as a person reads it (not from the triggers' SQL). */
function counterpartyOf(p: { rail: string; recipient: string; recipient_json: string | null }): string {
  if (p.rail === "x402") return new URL(p.recipient).host;
  if (p.rail === "fiat") {
    const b = JSON.parse(p.recipient_json!) as { name: string; account_number: string };
    return `${b.name} ****${b.account_number.slice(-4)}`;
  }
  return p.recipient.toLowerCase();
}

/** Non-zero counters, and the payments summed directly, both as `project|day|token|rail|counterparty → amount/fee/n`. */
async function countersAndPayments(db: TestDb["db"]) {
  const counters = (await sql<{ project_id: string; day: string; token_id: string; rail: string; counterparty: string; a: string; f: string; n: string }>`
    select project_id, day, token_id, rail, counterparty, amount_micros as a, fee_micros as f, n from spend_days where n <> 0 or amount_micros <> 0 or fee_micros <> 0`.execute(db)).rows;
  const payments = (await sql<{ project_id: string; created_at: string; token_id: string | null; rail: string; recipient: string; recipient_json: string | null; status: string; amount_micros: string; fee_micros: string }>`
    select project_id, created_at, token_id, rail, recipient, recipient_json, status, amount_micros, fee_micros from payments`.execute(db)).rows;
  const direct: Record<string, string> = {};
  for (const p of payments.filter((x) => x.status !== "failed" && x.status !== "reversed")) {
    const k = [p.project_id, p.created_at.slice(0, 10), p.token_id ?? "", p.rail, counterpartyOf(p)].join("|");
    const [a, f, n] = (direct[k] ?? "0/0/0").split("/").map(Number);
    direct[k] = `${a! + Number(p.amount_micros)}/${f! + Number(p.fee_micros)}/${n! + 1}`;
  }
  return { counters: Object.fromEntries(counters.map((c) => [[c.project_id, c.day, c.token_id, c.rail, c.counterparty].join("|"), `${Number(c.a)}/${Number(c.f)}/${Number(c.n)}`])), direct };
}

async function addToken(ledger: Ledger, db: TestDb["db"], projectId: string, name: string, controls: SpendingControls | null): Promise<string> {
  const id = newId("tok");
  await db.insertInto("api_tokens").values({ id, project_id: projectId, token_hash: id, display_prefix: `aw_test_${name.slice(0, 4)}`, permissions: "read,pay,x402", created_at: new Date().toISOString(), expires_at: null, revoked_at: null, spending_controls: controls ? JSON.stringify(controls) : null, name, parent_id: null, depth: 0, allowance_micros: null }).execute();
  return id;
}

describe.each(dialects)("spend day counters on %s", (dialect) => {
  let db: TestDb;
  let ledger: Ledger;
  let projectId: string;
  const ctx = () => ({ ledger, clock: () => new Date(), config: { spending: { approvalTimeoutMs: 60_000 } } }) as unknown as Parameters<typeof spendReport>[0];
  beforeAll(async () => {
    db = await createTestDb(dialect);
    ledger = ledgerOn(db, () => new Date());
    projectId = (await ledger.projects.create({ name: "spend", plan: "free" })).id;
    await db.db.updateTable("balances").set({ available_micros: 10_000_000_000 }).where("project_id", "=", projectId).execute();
  });
  afterAll(async () => db.drop());

  test("equal the payments they count, and the Spend page agrees with GET /v1/limits", async () => {
    const limited = await addToken(ledger, db.db, projectId, "researcher", DAILY_LIMIT);
    const plain = await addToken(ledger, db.db, projectId, "shopper", DAILY_LIMIT);
    const bank = JSON.stringify({ name: "Ada Payee", routing_number: "021000021", account_number: "****6789" });
    const kinds = [
      { rail: "usdc_transfer" as const, railTxnType: "usdc_transfer" as const, recipient: ADDRESS, recipientJson: null },
      { rail: "x402" as const, railTxnType: "x402_payment" as const, recipient: "http://api.example.com:8080/paid?x=1", recipientJson: null },
      { rail: "fiat" as const, railTxnType: "payment" as const, recipient: "Ada Payee", recipientJson: bank, currency: "usd" as const },
    ];
    const ids: string[] = [];
    // The limited token's holds are judged (they write and move its window counters); the other's are not (its windows are summed).
    const holds = Array.from({ length: 18 }, (_, i) => {
      const tokenId = i % 2 ? limited : plain;
      const k = kinds[i % 3]!;
      return ledger.payments.hold(usdcPayment(projectId, 1_000_000 * (i + 1), 10_000 + i, {
        ...k, tokenId,
        ...(tokenId === limited ? { controls: { tokenId, token: DAILY_LIMIT, project: null, recipientKey: `k${i}`, approvalTimeoutMs: 60_000 } } : {}),
      }));
    });
    for (const r of await Promise.all(holds)) {
      expect(r.kind).toBe("held");
      if (r.kind === "held") ids.push(r.payment.id);
    }
    await ledger.payments.resolve(ids[0]!, "failed");
    await ledger.payments.resolve(ids[1]!, "failed");
    await ledger.payments.resolve(ids[2]!, "completed");
    await ledger.payments.resolve(ids[5]!, "completed");
    await ledger.payments.reverse(ids[5]!, "returned");

    const { counters, direct } = await countersAndPayments(db.db);
    expect(Object.keys(direct).length).toBeGreaterThanOrEqual(6);
    expect(counters).toEqual(direct);

    const report = await spendReport(ctx(), projectId, "day");
    for (const tokenId of [limited, plain]) {
      const limits = await getTokenLimits(ctx() as never, tokenId);
      const daily = limits.windows.find((w) => w.scope === "token" && w.interval === "daily")!;
      const agent = report.by_agent.find((a) => a.key === tokenId)!;
      expect(agent.amount_micros / 1_000_000).toBe(daily.spent_usd);
      expect(report.burn.find((b) => b.token_id === tokenId)!.windows.find((w) => w.interval === "daily")!.spent_usd).toBe(daily.spent_usd);
    }
    expect(report.by_counterparty.map((c) => c.label).sort()).toEqual([ADDRESS.toLowerCase(), "Ada Payee (account ending 6789)", "api.example.com:8080"]);
    expect(report.by_rail.reduce((a, r) => a + r.amount_micros + r.fee_micros, 0)).toBe(report.total.amount_micros + report.total.fee_micros);
    expect(report.by_day.filter((d) => d.amount_micros > 0)).toHaveLength(1);
    if (dialect === "postgres") expect(Number((await sql<{ n: string }>`select count(*) as n from spend_day_changes`.execute(db.db)).rows[0]!.n)).toBe(0);
  });
});

describe.each(dialects)("migration 0032 on a %s database with payments", (dialect) => {
  test("counts the payments already there, then keeps counting", async () => {
    const opened = await createTestDb(dialect);
    try {
      // Back to before 0032: its table and triggers go, as a database that never had them.
      await sql.raw("drop table spend_days" + (dialect === "postgres" ? " cascade" : "")).execute(opened.db);
      for (const t of ["insert", "update", "delete"]) await sql.raw(`drop trigger spend_days_${t}${dialect === "postgres" ? " on payments" : ""}`).execute(opened.db);
      if (dialect === "postgres") await sql.raw("drop table spend_day_changes cascade").execute(opened.db);
      if (dialect === "postgres") for (const t of ["insert", "update", "delete"]) await sql.raw(`drop function spend_days_note_${t}() cascade`).execute(opened.db);
      if (dialect === "postgres") await sql.raw("drop function spend_days_apply() cascade").execute(opened.db);
      await opened.db.deleteFrom("kysely_migration" as never).where("name" as never, "=", "0032_spend_days" as never).execute();
      const ledger = ledgerOn(opened, () => new Date());
      const projectId = (await ledger.projects.create({ name: "m", plan: "free" })).id;
      await opened.db.updateTable("balances").set({ available_micros: 1_000_000_000 }).where("project_id", "=", projectId).execute();
      const held = await Promise.all([1, 2, 3].map((i) => ledger.payments.hold(usdcPayment(projectId, i * 1_000_000, 100))));
      const ids = held.map((r) => (r.kind === "held" ? r.payment.id : ""));
      await ledger.payments.resolve(ids[0]!, "failed");
      expect(await migrateToLatest(opened.db, dialect)).toEqual(["0032_spend_days"]);
      const before = await countersAndPayments(opened.db);
      expect(before.counters).toEqual(before.direct);
      expect(Object.values(before.counters)).toEqual(["5000000/200/2"]);
      await ledger.payments.resolve(ids[1]!, "failed");
      const after = await countersAndPayments(opened.db);
      expect(after.counters).toEqual(after.direct);
      expect(Object.values(after.counters)).toEqual(["3000000/100/1"]);
    } finally {
      await opened.drop();
    }
  });
});
