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

/** The counters equal the payments they count, and hold exactly these `amount/fee/n` figures. */
async function expectCounters(db: TestDb["db"], figures: string[]): Promise<void> {
  const { counters, direct } = await countersAndPayments(db);
  expect(counters).toEqual(direct);
  expect(Object.values(counters)).toEqual(figures);
}

/** A project with the balance for them and `count` USDC payments held on `db`, of 1, 2, … USDC (fee 100 each): their ids, in order. */
async function projectWithHolds(db: TestDb, count: number): Promise<{ ledger: Ledger; ids: string[] }> {
  const ledger = ledgerOn(db, () => new Date());
  const projectId = (await ledger.projects.create({ name: "m", plan: "free" })).id;
  await db.db.updateTable("balances").set({ available_micros: 1_000_000_000 }).where("project_id", "=", projectId).execute();
  const held = await Promise.all(Array.from({ length: count }, (_, i) => ledger.payments.hold(usdcPayment(projectId, (i + 1) * 1_000_000, 100))));
  return { ledger, ids: held.map((r) => (r.kind === "held" ? r.payment.id : "")) };
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

describe.each(dialects)("spend day counters under concurrent changes on %s", (dialect) => {
  test("property: resolutions, reversals and other changes made at once leave the counters equal to the payments", async () => {
    const db = await createTestDb(dialect);
    try {
      const ledger = ledgerOn(db, () => new Date());
      const projects = await Promise.all([1, 2].map(async (n) => {
        const id = (await ledger.projects.create({ name: `p${n}`, plan: "free" })).id;
        await db.db.updateTable("balances").set({ available_micros: 10_000_000_000 }).where("project_id", "=", id).execute();
        return id;
      }));
      const held = await Promise.all(Array.from({ length: 24 }, (_, i) => ledger.payments.hold(usdcPayment(projects[i % 2]!, 1_000_000 + i, 100 + i, { status: i % 3 ? "pending" : "processing" }))));
      const ids = held.map((r) => (r.kind === "held" ? r.payment.id : ""));
      // At once, on every connection the pool has: fail, complete then reverse, complete, and changes of columns nothing counts.
      await Promise.all(ids.map(async (id, i) => {
        if (i % 4 === 0) await ledger.payments.resolve(id, "failed");
        else if (i % 4 === 1) {
          await ledger.payments.resolve(id, "completed");
          await ledger.payments.reverse(id, "returned");
        } else if (i % 4 === 2) await ledger.payments.resolve(id, "completed");
        else await db.db.updateTable("payments").set({ updated_at: new Date().toISOString(), next_attempt_at: new Date().toISOString() }).where("id", "=", id).execute();
      }));
      const { counters, direct } = await countersAndPayments(db.db);
      expect(Object.keys(direct)).toHaveLength(2);
      expect(counters).toEqual(direct);
      if (dialect === "postgres") expect(Number((await sql<{ n: string }>`select count(*) as n from spend_day_changes`.execute(db.db)).rows[0]!.n)).toBe(0);
    } finally {
      await db.drop();
    }
  });
});

describe("spend day counters on postgres: what runs on an UPDATE of payments", () => {
  test("behavior: only a change of what is counted runs the counters' trigger function; the others cost it nothing", async () => {
    const db = await createTestDb("postgres");
    try {
      const [id] = (await projectWithHolds(db, 1)).ids;
      /**
       * Runs `statement` in a transaction of its own, with calls of PL/pgSQL functions counted: the counters' calls it
       * made. Counted as a difference: where the server counts calls already, the view also shows this connection's
       * earlier calls not yet flushed to the server's statistics.
       */
      const callsOf = (statement: ReturnType<typeof sql>) =>
        db.db.transaction().execute(async (trx) => {
          await sql`set local track_functions = 'pl'`.execute(trx);
          const calls = async () => Number((await sql<{ n: string | null }>`select sum(calls) as n from pg_stat_xact_user_functions where funcname like 'spend_days_note%'`.execute(trx)).rows[0]?.n ?? 0);
          const before = await calls();
          await statement.execute(trx);
          return (await calls()) - before;
        });
      // A lease, a retry time, a stage: the columns settlement changes most often; and a move between two counted statuses.
      expect(await callsOf(sql`update payments set lease_owner = 'w1', lease_until = '2030-01-01T00:00:00.000Z', next_attempt_at = '2030-01-01T00:00:00.000Z' where id = ${id}`)).toBe(0);
      expect(await callsOf(sql`update payments set rail_state = '{"stage":"x"}' where id = ${id}`)).toBe(0);
      expect(await callsOf(sql`update payments set status = 'processing' where id = ${id}`)).toBe(0);
      expect(await callsOf(sql`update payments set status = 'completed' where id = ${id}`)).toBe(0);
      expect(await callsOf(sql`update payments set id = id where false`)).toBe(0);
      // What is counted changes: the payment stops counting (reversed).
      expect(await callsOf(sql`update payments set status = 'reversed' where id = ${id}`)).toBe(1);
      await expectCounters(db.db, []);
    } finally {
      await db.drop();
    }
  });
});

describe("spend day counters on sqlite: what runs on an UPDATE of payments", () => {
  test("behavior: a move between two counted statuses writes no counter; a move out of the counted ones writes one", async () => {
    const db = await createTestDb("sqlite");
    try {
      const [id] = (await projectWithHolds(db, 1)).ids;
      // The counters' row writes, counted by temporary triggers on spend_days (SQLite's test database is one connection).
      await sql`create temp table counter_writes (n integer)`.execute(db.db);
      for (const op of ["insert", "update"]) await sql.raw(`create temp trigger counter_writes_${op} after ${op} on main.spend_days begin insert into counter_writes values (1); end`).execute(db.db);
      /** The counter writes `statement` made. */
      const writesOf = async (statement: ReturnType<typeof sql>) => {
        await sql`delete from counter_writes`.execute(db.db);
        await statement.execute(db.db);
        return Number((await sql<{ n: number }>`select count(*) as n from counter_writes`.execute(db.db)).rows[0]!.n);
      };
      expect(await writesOf(sql`update payments set lease_owner = 'w1', lease_until = '2030-01-01T00:00:00.000Z' where id = ${id}`)).toBe(0);
      expect(await writesOf(sql`update payments set status = 'processing' where id = ${id}`)).toBe(0);
      expect(await writesOf(sql`update payments set status = 'completed' where id = ${id}`)).toBe(0);
      // What is counted changes: the payment stops counting (reversed), then its amount changes while it does not count.
      expect(await writesOf(sql`update payments set status = 'reversed' where id = ${id}`)).toBe(1);
      expect(await writesOf(sql`update payments set amount_micros = amount_micros + 1 where id = ${id}`)).toBe(0);
      await expectCounters(db.db, []);
    } finally {
      await db.drop();
    }
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
      const { ledger, ids } = await projectWithHolds(opened, 3);
      await ledger.payments.resolve(ids[0]!, "failed");
      expect(await migrateToLatest(opened.db, dialect)).toEqual(["0032_spend_days"]);
      await expectCounters(opened.db, ["5000000/200/2"]);
      await ledger.payments.resolve(ids[1]!, "failed");
      await expectCounters(opened.db, ["3000000/100/1"]);
    } finally {
      await opened.drop();
    }
  });
});

/** What shows that a database's UPDATE trigger is the narrowed one. */
const narrowed = {
  // A row trigger with a WHEN (0034).
  postgres: async (db: TestDb["db"]) =>
    expect((await sql<{ row: boolean; when: boolean }>`
      select (tgtype & 1) = 1 as row, tgqual is not null as when from pg_trigger where tgname = 'spend_days_update' and tgrelid = 'payments'::regclass`.execute(db)).rows).toEqual([{ row: true, when: true }]),
  // The key's recipient columns in its list (0035).
  sqlite: async (db: TestDb["db"]) =>
    expect((await sql<{ sql: string }>`select sql from sqlite_master where type = 'trigger' and name = 'spend_days_update'`.execute(db)).rows[0]!.sql).toContain("recipient_json"),
};

describe.each([
  ["postgres", "0033_refusal_limits", "0034_spend_days_update_by_row"],
  ["sqlite", "0034_spend_days_update_by_row", "0035_spend_days_update_counted"],
] as const)("the UPDATE trigger narrowed on a %s database with payments (after %s)", (dialect, before, migration) => {
  test(`${migration}: the counters stay equal to the payments across the upgrade, then keep counting`, async () => {
    const db = await createTestDb(dialect, { migrateTo: before });
    try {
      const { ledger, ids } = await projectWithHolds(db, 4);
      await ledger.payments.resolve(ids[0]!, "failed");
      expect(await migrateToLatest(db.db, dialect)).toContain(migration);
      await narrowed[dialect](db.db);
      await ledger.payments.resolve(ids[1]!, "failed");
      await ledger.payments.resolve(ids[2]!, "completed");
      await ledger.payments.reverse(ids[2]!, "returned");
      await ledger.payments.resolve(ids[3]!, "completed");
      await expectCounters(db.db, ["4000000/100/1"]);
    } finally {
      await db.drop();
    }
  });
});
