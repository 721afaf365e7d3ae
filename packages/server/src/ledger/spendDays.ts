/**
 * Spend per (project, UTC day, token, rail, counterparty): the amounts and fees of the payments that count
 * against limits (every status but failed and reversed, as a window counter counts them: domain/spending.ts),
 * kept by triggers in the same transaction as every insert, change and delete of a payment row, whichever
 * code path makes it (migration 0032). The console's Spend page and a limit window without its counter row
 * sum these rows over the days of a window instead of the payments themselves: a month is a few thousand
 * rows at most, whatever the number of payments.
 *
 * The counterparty is what a person recognises and what controls name: an x402 URL's host (with its port),
 * an EVM address in lower case, a bank account as its holder's name and the last four digits of its number.
 * A payment without a token (made before tokens were recorded) counts under token "".
 */
import type { Db, Dialect } from "./db.ts";

/** Payment statuses whose amount counts against limits and as spent (a failure or reversal gives it back). */
const COUNTED = `status not in ('failed', 'reversed')`;

/** The counterparty of a payment row `r` (a row alias or `new`/`old`), as SQL of the dialect. */
function counterpartySql(dialect: Dialect, r: string): string {
  if (dialect === "postgres") {
    return `case ${r}.rail
      when 'x402' then lower(coalesce(substring(${r}.recipient from '://([^/?#]*)'), ${r}.recipient))
      when 'fiat' then coalesce(${r}.recipient_json::jsonb->>'name', ${r}.recipient) || ' ****' || right(coalesce(${r}.recipient_json::jsonb->>'account_number', ''), 4)
      else lower(${r}.recipient) end`;
  }
  const rest = `substr(${r}.recipient, instr(${r}.recipient, '://') + 3)`;
  const authority = `substr(${rest}, 1, instr(${rest} || '/', '/') - 1)`;
  const host = `substr(${authority}, 1, instr(${authority} || '?', '?') - 1)`;
  return `case ${r}.rail
      when 'x402' then lower(${host})
      when 'fiat' then coalesce(json_extract(${r}.recipient_json, '$.name'), ${r}.recipient) || ' ****' || substr(coalesce(json_extract(${r}.recipient_json, '$.account_number'), ''), -4)
      else lower(${r}.recipient) end`;
}

/** The counter key of a payment row `r`, as a select list: project_id, day, token_id, rail, counterparty. */
const keyOf = (dialect: Dialect, r: string) =>
  `${r}.project_id, substr(${r}.created_at, 1, 10), coalesce(${r}.token_id, ''), ${r}.rail, ${counterpartySql(dialect, r)}`;

const SQLITE_ADD = (r: "new" | "old", sign: 1 | -1) =>
  `insert into spend_days (project_id, day, token_id, rail, counterparty, amount_micros, fee_micros, n)
     select ${keyOf("sqlite", r)}, ${sign} * ${r}.amount_micros, ${sign} * ${r}.fee_micros, ${sign} where ${r}.${COUNTED}
     on conflict (project_id, day, token_id, rail, counterparty) do update set
       amount_micros = amount_micros + excluded.amount_micros, fee_micros = fee_micros + excluded.fee_micros, n = n + excluded.n;`;

/**
 * SQLite: row triggers. A change of status (or of an amount or the token) takes the old figures out and
 * puts the new ones in; each half only when its status counts.
 */
const SQLITE_SPEND_DAYS = [
  `create table spend_days (
     project_id text not null, day text not null, token_id text not null, rail text not null, counterparty text not null,
     amount_micros integer not null, fee_micros integer not null, n integer not null,
     primary key (project_id, day, token_id, rail, counterparty)) without rowid`,
  `create trigger spend_days_insert after insert on payments begin ${SQLITE_ADD("new", 1)} end`,
  `create trigger spend_days_update after update of status, amount_micros, fee_micros, token_id, created_at, project_id, rail on payments
     when old.status is not new.status or old.amount_micros is not new.amount_micros or old.fee_micros is not new.fee_micros
       or old.token_id is not new.token_id or old.created_at is not new.created_at or old.project_id is not new.project_id or old.rail is not new.rail begin
     ${SQLITE_ADD("old", -1)}
     ${SQLITE_ADD("new", 1)}
   end`,
  `create trigger spend_days_delete after delete on payments begin ${SQLITE_ADD("old", -1)} end`,
];

/** The counted rows of a transition table as signed figures per key. */
const tg = (rows: string, sign: 1 | -1) =>
  `select r.project_id, substr(r.created_at, 1, 10) as day, coalesce(r.token_id, '') as token_id, r.rail, ${counterpartySql("postgres", "r")} as counterparty,
         ${sign} * r.amount_micros as amount_micros, ${sign} * r.fee_micros as fee_micros, ${sign} as n
       from ${rows} r where r.${COUNTED}`;

/**
 * PostgreSQL: as its transaction counters (migrations.ts, PG_TRANSACTION_COUNTS), a statement notes its
 * changes per counter under its transaction's id, and at commit a deferred trigger moves them into
 * `spend_days` in one statement in key order, so two writers of one project never lock counter rows in
 * opposite orders. The notes table is unlogged: its rows never outlive the transaction that wrote them.
 * Migration 0034 replaced the UPDATE trigger made here (PG_SPEND_DAYS_UPDATE_BY_ROW).
 */
const PG_SPEND_DAYS = [
  `create table spend_days (
     project_id text not null, day text not null, token_id text not null, rail text not null, counterparty text not null,
     amount_micros bigint not null, fee_micros bigint not null, n bigint not null,
     primary key (project_id, day, token_id, rail, counterparty))`,
  `create unlogged table spend_day_changes (
     xid bigint not null, project_id text not null, day text not null, token_id text not null, rail text not null, counterparty text not null,
     amount_micros bigint not null, fee_micros bigint not null, n bigint not null)`,
  `create index spend_day_changes_xid on spend_day_changes (xid)`,
  `create function spend_days_apply() returns trigger language plpgsql as $fn$
begin
  with moved as (delete from spend_day_changes where xid = txid_current() returning project_id, day, token_id, rail, counterparty, amount_micros, fee_micros, n)
  insert into spend_days (project_id, day, token_id, rail, counterparty, amount_micros, fee_micros, n)
    select project_id, day, token_id, rail, counterparty, sum(amount_micros), sum(fee_micros), sum(n) from moved group by 1, 2, 3, 4, 5 order by 1, 2, 3, 4, 5
    on conflict (project_id, day, token_id, rail, counterparty) do update set
      amount_micros = spend_days.amount_micros + excluded.amount_micros, fee_micros = spend_days.fee_micros + excluded.fee_micros, n = spend_days.n + excluded.n;
  return null;
end
$fn$`,
  // A function per event: a function may name only the transition tables its trigger declares.
  ...(["insert", "update", "delete"] as const).flatMap((op) => [
    `create function spend_days_note_${op}() returns trigger language plpgsql as $fn$
begin
  insert into spend_day_changes (xid, project_id, day, token_id, rail, counterparty, amount_micros, fee_micros, n)
    select txid_current(), project_id, day, token_id, rail, counterparty, sum(amount_micros), sum(fee_micros), sum(n) from (
      ${[op !== "insert" ? tg("old_rows", -1) : null, op !== "delete" ? tg("new_rows", 1) : null].filter(Boolean).join("\n      union all\n      ")}) as c
    group by 2, 3, 4, 5, 6 having sum(n) <> 0 or sum(amount_micros) <> 0 or sum(fee_micros) <> 0;
  return null;
end
$fn$`,
    `create trigger spend_days_${op} after ${op} on payments referencing ${op === "insert" ? "new table as new_rows" : op === "delete" ? "old table as old_rows" : "old table as old_rows new table as new_rows"}
       for each statement execute function spend_days_note_${op}()`,
  ]),
  `create constraint trigger spend_days_apply after insert on spend_day_changes
     deferrable initially deferred for each row execute function spend_days_apply()`,
];

/**
 * What a payment's counter depends on: whether its status counts, its amounts, and the columns of its key. A
 * move between two counted statuses (pending → processing → completed) changes nothing counted.
 */
const COUNTED_COLUMNS = ["status", "amount_micros", "fee_micros", "token_id", "created_at", "project_id", "rail", "recipient", "recipient_json"];
const CHANGES_WHAT_IS_COUNTED = [
  `(old.${COUNTED}) is distinct from (new.${COUNTED})`,
  ...COUNTED_COLUMNS.filter((c) => c !== "status").map((c) => `old.${c} is distinct from new.${c}`),
].join(" or ");

/** A payment row's figures (`old` taken out, `new` put in) where its status counts. */
const rowFigures = (r: "old" | "new", sign: 1 | -1) =>
  `select ${r}.project_id, substr(${r}.created_at, 1, 10) as day, coalesce(${r}.token_id, '') as token_id, ${r}.rail, ${counterpartySql("postgres", r)} as counterparty,
             ${sign} * ${r}.amount_micros as amount_micros, ${sign} * ${r}.fee_micros as fee_micros, ${sign} as n where ${r}.${COUNTED}`;

/**
 * PostgreSQL, migration 0034: the UPDATE trigger of 0032 ran for every UPDATE statement of payments, even one that
 * changed a lease, a stage or nothing (its transition tables, the function, its query). It is now a row trigger
 * that runs only for the rows whose counted figures change: its column list skips it, before anything is read,
 * for an UPDATE that sets none of them (a lease, a stage, a retry time), and its WHEN, judged without calling
 * anything, for one that sets them to what counts the same (pending → processing → completed). A WHEN is read
 * and prepared again for every statement, so the column list is what makes the common UPDATE cost nothing.
 * It notes its changes as the statement trigger did, so the deferred move into `spend_days` at commit, and its
 * lock order, are unchanged. (PostgreSQL refuses a column list on a trigger with transition tables, so the
 * statement trigger could not be narrowed instead.) A column a BEFORE trigger changes without the UPDATE
 * setting it is not seen: the only one, the masking of a bank account number at a final status
 * (migrations.ts), comes with a set status, and keeps the counterparty's last four digits.
 */
const PG_SPEND_DAYS_UPDATE_BY_ROW = [
  `drop trigger spend_days_update on payments`,
  `drop function spend_days_note_update()`,
  `create function spend_days_note_update() returns trigger language plpgsql as $fn$
begin
  insert into spend_day_changes (xid, project_id, day, token_id, rail, counterparty, amount_micros, fee_micros, n)
    select txid_current(), project_id, day, token_id, rail, counterparty, sum(amount_micros), sum(fee_micros), sum(n) from (
      ${rowFigures("old", -1)}
      union all
      ${rowFigures("new", 1)}) as c
    group by 2, 3, 4, 5, 6 having sum(n) <> 0 or sum(amount_micros) <> 0 or sum(fee_micros) <> 0;
  return null;
end
$fn$`,
  `create trigger spend_days_update after update of ${COUNTED_COLUMNS.join(", ")} on payments for each row when (${CHANGES_WHAT_IS_COUNTED}) execute function spend_days_note_update()`,
];

/** Migration 0034's statements for this database: none on SQLite, whose UPDATE trigger is a row trigger with a WHEN already. */
export function spendDaysUpdateByRowMigration(dialect: Dialect): string[] {
  return dialect === "postgres" ? PG_SPEND_DAYS_UPDATE_BY_ROW : [];
}

/**
 * SQLite, migration 0035: the UPDATE trigger of 0032 ran on any change of status, so each move between two counted
 * statuses (pending → processing → completed) wrote two counter rows that cancel out, on the settlement's writes.
 * It now runs, as PostgreSQL's does since 0034, only when what is counted changes: whether the status counts, an
 * amount, or a column of the counter's key (the recipient columns too, which 0032's list left out).
 */
const SQLITE_SPEND_DAYS_UPDATE_COUNTED = [
  `drop trigger spend_days_update`,
  `create trigger spend_days_update after update of ${COUNTED_COLUMNS.join(", ")} on payments
     when ${CHANGES_WHAT_IS_COUNTED.replaceAll(" is distinct from ", " is not ")} begin
     ${SQLITE_ADD("old", -1)}
     ${SQLITE_ADD("new", 1)}
   end`,
];

/** Migration 0035's statements for this database: none on PostgreSQL, whose trigger 0034 narrowed. */
export function spendDaysUpdateCountedMigration(dialect: Dialect): string[] {
  return dialect === "sqlite" ? SQLITE_SPEND_DAYS_UPDATE_COUNTED : [];
}

/** The backfill of payments made before the counters: run after the triggers exist (they lock out writers on PostgreSQL until the migration commits). */
const backfill = (dialect: Dialect) =>
  `insert into spend_days (project_id, day, token_id, rail, counterparty, amount_micros, fee_micros, n)
     select ${keyOf(dialect, "p")}, sum(p.amount_micros), sum(p.fee_micros), count(*) from payments p where p.${COUNTED}
     group by 1, 2, 3, 4, 5`;

/** Migration 0032's statements for this database. */
export function spendDaysMigration(dialect: Dialect): string[] {
  return [...(dialect === "postgres" ? PG_SPEND_DAYS : SQLITE_SPEND_DAYS), backfill(dialect)];
}

/** One counter summed over days: a (token, rail, counterparty) and what it spent. */
export type SpendDayTotal = { token_id: string; rail: string; counterparty: string; amount_micros: number; fee_micros: number; n: number };

export class SpendDays {
  constructor(private readonly db: Db) {}

  /** Spend per (token, rail, counterparty) of the UTC days in [fromDay, toDay) ("YYYY-MM-DD"). */
  async totals(projectId: string, fromDay: string, toDay: string): Promise<SpendDayTotal[]> {
    const rows = await this.db
      .selectFrom("spend_days")
      .select((eb) => ["token_id", "rail", "counterparty", eb.fn.sum<number>("amount_micros").as("amount_micros"), eb.fn.sum<number>("fee_micros").as("fee_micros"), eb.fn.sum<number>("n").as("n")])
      .where("project_id", "=", projectId)
      .where("day", ">=", fromDay)
      .where("day", "<", toDay)
      .groupBy(["token_id", "rail", "counterparty"])
      .execute();
    return rows.map((r) => ({ token_id: r.token_id, rail: r.rail, counterparty: r.counterparty, amount_micros: Number(r.amount_micros), fee_micros: Number(r.fee_micros), n: Number(r.n) }));
  }

  /** Spend (amount and fees) per UTC day in [fromDay, toDay), for the chart over time. */
  async byDay(projectId: string, fromDay: string, toDay: string): Promise<{ day: string; amount_micros: number; fee_micros: number }[]> {
    const rows = await this.db
      .selectFrom("spend_days")
      .select((eb) => ["day", eb.fn.sum<number>("amount_micros").as("amount_micros"), eb.fn.sum<number>("fee_micros").as("fee_micros")])
      .where("project_id", "=", projectId)
      .where("day", ">=", fromDay)
      .where("day", "<", toDay)
      .groupBy("day")
      .orderBy("day")
      .execute();
    return rows.map((r) => ({ day: r.day, amount_micros: Number(r.amount_micros), fee_micros: Number(r.fee_micros) }));
  }
}

/**
 * The amounts (never fees) counted in [from, to) (ISO instants at UTC midnights, or "" and "~" for all time)
 * for a project, or for some of its tokens: what a window counter holds, summed from the day counters.
 */
export async function countedAmount(db: Db, projectId: string, tokenIds: string[] | null, from: string, to: string): Promise<number> {
  let q = db
    .selectFrom("spend_days")
    .select((eb) => eb.fn.coalesce(eb.fn.sum<number>("amount_micros"), eb.lit(0)).as("spent"))
    .where("project_id", "=", projectId)
    .where("day", ">=", from.slice(0, 10))
    .where("day", "<", to.slice(0, 10));
  if (tokenIds) q = q.where("token_id", "in", tokenIds);
  return Number((await q.executeTakeFirstOrThrow()).spent);
}
