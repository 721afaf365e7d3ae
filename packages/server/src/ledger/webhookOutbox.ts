/**
 * Webhooks to clients, in the database: endpoints, the outbox of events and one delivery row per
 * (event, endpoint). Events are written by triggers on the status columns of `payments` and `deposits`
 * (migration 0012), so every code path that changes a status — the SQLite group commit, the
 * PostgreSQL batch functions, a CLI command — writes its event in the same transaction as the change:
 * no event without its change, no change without its event. A trigger writes only when the project
 * has an enabled endpoint that wants the event, so projects without endpoints pay one indexed probe.
 * Since migration 0024 the same events, for every project, are also rows of `status_history`: the console's
 * status history reads them, so it shows the transitions the webhooks report.
 *
 * Deliveries are leased like payments (a compare-and-set on `lease_until`, with `for update skip
 * locked` on PostgreSQL), so several processes on one database send each attempt once, and a process
 * killed mid-delivery leaves a lease that expires and is taken again.
 */
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import type { Db, Dialect } from "./db.ts";
import type { WebhookDeliveriesTable, WebhookEndpointsTable, WebhookOutboxTable } from "./schema.ts";
import type { Actor } from "../domain/audit.ts";
import { recordAudit, withAudit } from "./auditLog.ts";

export type WebhookEndpointRow = WebhookEndpointsTable;
export type WebhookEventRow = WebhookOutboxTable;
export type WebhookDeliveryRow = WebhookDeliveriesTable;

/** Every event type; a trigger writes each (see WEBHOOK_TRIGGERS). */
export const WEBHOOK_EVENT_TYPES = [
  "payment.created",
  "payment.processing",
  "payment.completed",
  "payment.failed",
  "payment.reversed",
  "payment.approval_required",
  // Written by the approval triggers (migration 0029): a person approved or denied a waiting payment.
  "payment.approved",
  "payment.denied",
  "deposit.pending",
  "deposit.credited",
  // Written by Projects.setWalletFrozen (not a trigger): USDC's blacklister froze or released the wallet.
  "wallet.frozen",
  "wallet.unfrozen",
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** A claimed delivery: its row, its event, and where it goes. */
export type ClaimedDelivery = WebhookDeliveryRow & {
  type: string;
  project_id: string;
  object_id: string;
  status: string;
  occurred_at: string;
  payload: string | null;
  url: string;
  secret_box: string;
};

/** What one attempt came to (workers/webhookDelivery.ts). */
export type AttemptOutcome = {
  eventId: string;
  endpointId: string;
  at: string;
  status: number | null;
} & ({ delivered: true } | { delivered: false; error: string; nextAttemptAt: string | null; disableIfFailingSince?: string });

/** The endpoint wants the event: it names no events (all), or names this one. `events` is stored as ",a,b,". */
const wants = (endpoint: string, type: string) => `(${endpoint}.events is null or instr(${endpoint}.events, ',' || ${type} || ',') > 0)`;
const wantsPg = (endpoint: string, type: string) => `(${endpoint}.events is null or position(',' || ${type} || ',' in ${endpoint}.events) > 0)`;

/** One event a trigger writes: on which change, its type, the object and the time it happened. */
type TriggerEvent = { table: "payments" | "deposits"; on: "insert" | "status"; when: string; type: string; object: string; at: string };

const EVENTS: TriggerEvent[] = [
  { table: "payments", on: "insert", when: "1 = 1", type: "'payment.created'", object: "new.id", at: "new.created_at" },
  { table: "payments", on: "insert", when: "new.status = 'processing'", type: "'payment.processing'", object: "new.id", at: "new.created_at" },
  { table: "payments", on: "insert", when: "new.approval = 'awaiting'", type: "'payment.approval_required'", object: "new.id", at: "new.created_at" },
  {
    table: "payments",
    on: "status",
    when: "new.status in ('processing', 'completed', 'failed', 'reversed')",
    type: "'payment.' || new.status",
    object: "new.id",
    at: "coalesce(new.updated_at, new.created_at)",
  },
  // A seen deposit carries the id its `usdc_fund` transaction will have once credited (deposits.ts).
  { table: "deposits", on: "insert", when: "new.status = 'seen' and new.txn_id is not null", type: "'deposit.pending'", object: "new.txn_id", at: "new.seen_at" },
  { table: "deposits", on: "status", when: "new.status = 'credited'", type: "'deposit.credited'", object: "new.txn_id", at: "coalesce(new.credited_at, new.seen_at)" },
];

/**
 * SQLite: every event, whether or not an endpoint wants it, is also a row of `status_history` (migration
 * 0024), the transitions the console's status history shows: the same list, the same conditions, the same
 * transaction, so the console and the webhooks tell one story.
 */
function sqliteHistoryTrigger(e: TriggerEvent, i: number): string {
  const timing = e.on === "insert" ? `after insert on ${e.table}` : `after update of status on ${e.table}`;
  const changed = e.on === "status" ? "old.status is not new.status and " : "";
  return `create trigger status_history_${i} ${timing}
    when ${changed}(${e.when})
    begin
      insert into status_history (project_id, object_id, type, status, at) values (new.project_id, ${e.object}, ${e.type}, new.status, ${e.at});
    end`;
}

/** SQLite: one trigger per event; `last_insert_rowid()` inside a trigger is the row the trigger inserted. */
function sqliteTrigger(e: TriggerEvent, i: number): string {
  const enabled = (type: string) => `e.project_id = new.project_id and e.disabled_at is null and ${wants("e", type)}`;
  const timing = e.on === "insert" ? `after insert on ${e.table}` : `after update of status on ${e.table}`;
  const changed = e.on === "status" ? "old.status is not new.status and " : "";
  return `create trigger webhook_event_${i} ${timing}
    when ${changed}(${e.when}) and exists (select 1 from webhook_endpoints e where ${enabled(e.type)})
    begin
      insert into webhook_outbox (id, project_id, type, object_id, status, occurred_at)
        values ('evt_' || lower(hex(randomblob(12))), new.project_id, ${e.type}, ${e.object}, new.status, ${e.at});
      insert into webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
        select o.id, e.id, 'pending', 0, o.occurred_at from webhook_outbox o, webhook_endpoints e
        where o.seq = last_insert_rowid() and ${enabled("o.type")};
    end`;
}

/**
 * PostgreSQL: one function writes an event and its deliveries; a row trigger per table calls it for
 * each event of the change (a trigger's WHEN cannot hold a subquery, so the endpoint probe is inside).
 */
function pgFunctions(history: boolean): string[] {
  const enqueue = `create or replace function webhook_enqueue(p_project text, p_type text, p_object text, p_status text, p_at text) returns void
    language plpgsql as $$
    declare v_id text;
    begin
      if not exists (select 1 from webhook_endpoints e where e.project_id = p_project and e.disabled_at is null and ${wantsPg("e", "p_type")}) then return; end if;
      v_id := 'evt_' || replace(gen_random_uuid()::text, '-', '');
      insert into webhook_outbox (id, project_id, type, object_id, status, occurred_at) values (v_id, p_project, p_type, p_object, p_status, p_at);
      insert into webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
        select v_id, e.id, 'pending', 0, p_at from webhook_endpoints e where e.project_id = p_project and e.disabled_at is null and ${wantsPg("e", "p_type")};
    end $$`;
  const out = [enqueue];
  for (const table of ["payments", "deposits"] as const) {
    const body = (on: "insert" | "status") =>
      EVENTS.filter((e) => e.table === table && e.on === on)
        .map((e) => {
          const record = history ? `insert into status_history (project_id, object_id, type, status, at) values (new.project_id, ${e.object}, ${e.type}, new.status, ${e.at}); ` : "";
          return `if ${e.when} then ${record}perform webhook_enqueue(new.project_id, ${e.type}, ${e.object}, new.status, ${e.at}); end if;`;
        })
        .join("\n        ");
    out.push(`create or replace function webhook_${table}_events() returns trigger language plpgsql as $$
      begin
        if tg_op = 'INSERT' then
        ${body("insert")}
        else
        ${body("status")}
        end if;
        return null;
      end $$`);
    if (history) continue;
    out.push(`create trigger webhook_${table}_insert after insert on ${table} for each row execute function webhook_${table}_events()`);
    out.push(`create trigger webhook_${table}_status after update of status on ${table} for each row when (old.status is distinct from new.status) execute function webhook_${table}_events()`);
  }
  return out;
}

/** The statements of migration 0012 after its tables: the triggers that write events. */
export function webhookTriggers(dialect: Dialect): string[] {
  // SQLite fires the triggers of one change newest first: created in reverse, they write in EVENTS order.
  return dialect === "postgres" ? pgFunctions(false) : EVENTS.map(sqliteTrigger).reverse();
}

/**
 * The statements of migration 0024 after its table: every event is also recorded in `status_history`. On
 * PostgreSQL the trigger functions are replaced (the triggers stay); on SQLite triggers of their own.
 */
export function statusHistoryTriggers(dialect: Dialect): string[] {
  return dialect === "postgres" ? pgFunctions(true) : EVENTS.map(sqliteHistoryTrigger).reverse();
}

/**
 * The statements of migration 0029: `payment.approved` / `payment.denied`, written by a trigger on the
 * `approval` column in the same write as the decision (whichever path decides: CLI, admin API, console),
 * as the status triggers write theirs. An approval that expires is reported by its `payment.failed`.
 */
export function approvalWebhookTriggers(dialect: Dialect): string[] {
  const type = "'payment.' || new.approval";
  const at = "coalesce(new.approval_decided_at, new.updated_at, new.created_at)";
  const decided = "old.approval = 'awaiting' and new.approval in ('approved', 'denied')";
  if (dialect === "postgres") {
    return [
      `create or replace function webhook_payments_approval() returns trigger language plpgsql as $$
        begin
          if ${decided} then perform webhook_enqueue(new.project_id, ${type}, new.id, new.status, ${at}); end if;
          return null;
        end $$`,
      `create trigger webhook_payments_approval after update of approval on payments for each row when (old.approval is distinct from new.approval) execute function webhook_payments_approval()`,
    ];
  }
  const enabled = (t: string) => `e.project_id = new.project_id and e.disabled_at is null and ${wants("e", t)}`;
  return [
    `create trigger webhook_approval_event after update of approval on payments
      when ${decided} and exists (select 1 from webhook_endpoints e where ${enabled(type)})
      begin
        insert into webhook_outbox (id, project_id, type, object_id, status, occurred_at)
          values ('evt_' || lower(hex(randomblob(12))), new.project_id, ${type}, new.id, new.status, ${at});
        insert into webhook_deliveries (event_id, endpoint_id, state, attempts, next_attempt_at)
          select o.id, e.id, 'pending', 0, o.occurred_at from webhook_outbox o, webhook_endpoints e
          where o.seq = last_insert_rowid() and ${enabled("o.type")};
      end`,
  ];
}

/** Stores `events` as ",a,b," so a trigger matches one with a substring test; null = every event. */
export const eventsColumn = (events: readonly string[] | null) => (events && events.length ? `,${events.join(",")},` : null);
export const eventsOf = (column: string | null) => (column ? column.split(",").filter(Boolean) : null);

/**
 * Writes an event that no trigger writes (a project's wallet frozen or released) and its deliveries, in
 * the caller's transaction, for the project's enabled endpoints that want it; its body is stored now, so
 * the deliverer sends it as it is. Nothing when no endpoint wants it.
 */
export async function enqueueEvent(
  trx: Db,
  e: { projectId: string; type: WebhookEventType; objectId: string; status: string; occurredAt: string; payload: string },
): Promise<void> {
  const endpoints = await trx.selectFrom("webhook_endpoints").select(["id", "events"]).where("project_id", "=", e.projectId).where("disabled_at", "is", null).execute();
  const wanting = endpoints.filter((x) => x.events === null || x.events.includes(`,${e.type},`));
  if (!wanting.length) return;
  const id = `evt_${randomBytes(12).toString("hex")}`;
  await trx.insertInto("webhook_outbox").values({ id, project_id: e.projectId, type: e.type, object_id: e.objectId, status: e.status, occurred_at: e.occurredAt, payload: e.payload }).execute();
  await trx
    .insertInto("webhook_deliveries")
    .values(wanting.map((x) => ({ event_id: id, endpoint_id: x.id, state: "pending", attempts: 0, next_attempt_at: e.occurredAt })))
    .execute();
}

export class WebhookOutbox {
  constructor(
    readonly db: Db,
    readonly dialect: Dialect,
  ) {}

  /** A new endpoint (its secret sealed); with an actor, its audit entry (never the secret) in the same transaction. */
  async insertEndpoint(row: WebhookEndpointRow, actor?: Actor): Promise<void> {
    await withAudit(this.db, actor, row.created_at, async (trx) => {
      await trx.insertInto("webhook_endpoints").values(row).execute();
      return { result: undefined, change: { action: "webhook.created", projectId: row.project_id, targetId: row.id, before: null, after: { url: row.url, events: eventsOf(row.events) } } };
    });
  }

  getEndpoint(id: string) {
    return this.db.selectFrom("webhook_endpoints").selectAll().where("id", "=", id).where("deleted_at", "is", null).executeTakeFirst();
  }

  listEndpoints(projectId: string) {
    return this.db.selectFrom("webhook_endpoints").selectAll().where("project_id", "=", projectId).where("deleted_at", "is", null).orderBy("created_at").orderBy("id").execute();
  }

  /** Deletes an endpoint: nothing more is written or sent to it; its past deliveries stay readable. */
  async deleteEndpoint(id: string, at: string, actor?: Actor): Promise<boolean> {
    return withAudit(this.db, actor, at, async (trx) => {
      const r = await trx.updateTable("webhook_endpoints").set({ deleted_at: at, disabled_at: at, disabled_reason: "deleted" }).where("id", "=", id).where("deleted_at", "is", null).returning(["project_id", "url"]).executeTakeFirst();
      return { result: !!r, change: r ? { action: "webhook.deleted", projectId: r.project_id, targetId: id, before: { url: r.url, deleted_at: null }, after: { deleted_at: at } } : null };
    });
  }

  /** Enables a disabled endpoint again: its pending deliveries are due at once. */
  async enableEndpoint(id: string, at: string, actor?: Actor): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const before = await trx.selectFrom("webhook_endpoints").select(["project_id", "disabled_at", "disabled_reason"]).where("id", "=", id).where("deleted_at", "is", null).executeTakeFirst();
      if (!before) return false;
      await trx.updateTable("webhook_endpoints").set({ disabled_at: null, disabled_reason: null, failing_since: null }).where("id", "=", id).execute();
      await trx.updateTable("webhook_deliveries").set({ next_attempt_at: at }).where("endpoint_id", "=", id).where("state", "=", "pending").execute();
      if (actor) await recordAudit(trx, actor, { action: "webhook.enabled", projectId: before.project_id, targetId: id, before: { disabled_at: before.disabled_at, disabled_reason: before.disabled_reason }, after: { disabled_at: null, disabled_reason: null } }, at);
      return true;
    });
  }

  /** The newest deliveries of an endpoint with their events, newest first. */
  listDeliveries(endpointId: string, limit: number) {
    return this.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_outbox as o", "o.id", "d.event_id")
      .select(["d.event_id", "o.type", "o.object_id", "o.occurred_at", "d.state", "d.attempts", "d.next_attempt_at", "d.last_attempt_at", "d.last_status", "d.last_error", "d.delivered_at"])
      .where("d.endpoint_id", "=", endpointId)
      .orderBy("o.seq", "desc")
      .limit(limit)
      .execute();
  }

  /** The deliveries of a project's events about one object (a payment's or a deposit's transaction id), newest first. */
  listDeliveriesOf(projectId: string, objectId: string, limit: number) {
    return this.db
      .selectFrom("webhook_outbox as o")
      .innerJoin("webhook_deliveries as d", "d.event_id", "o.id")
      .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
      .select(["d.event_id", "d.endpoint_id", "e.url", "o.type", "o.object_id", "o.occurred_at", "d.state", "d.attempts", "d.next_attempt_at", "d.last_attempt_at", "d.last_status", "d.last_error", "d.delivered_at"])
      .where("o.project_id", "=", projectId)
      .where("o.object_id", "=", objectId)
      .orderBy("o.seq", "desc")
      .limit(limit)
      .execute();
  }

  getEvent(id: string) {
    return this.db.selectFrom("webhook_outbox").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /**
   * Sends an event again to each enabled endpoint it was written for, as a new series of attempts due
   * now (a delivery in flight keeps its lease). Returns how many deliveries were scheduled.
   */
  async redeliver(eventId: string, at: string): Promise<number> {
    const r = await this.db
      .updateTable("webhook_deliveries")
      .set({ state: "pending", attempts: 0, next_attempt_at: at })
      .where("event_id", "=", eventId)
      .where("endpoint_id", "in", (eb) => eb.selectFrom("webhook_endpoints").select("id").where("disabled_at", "is", null))
      .executeTakeFirst();
    return Number(r.numUpdatedRows);
  }

  /**
   * Leases up to `max` due deliveries to `owner` until `leaseUntil`, counting the attempt: one
   * statement, a compare-and-set on the lease (PostgreSQL skips rows another process is taking). An
   * endpoint gets at most `perEndpoint` deliveries under lease at once, its earliest due first, counting
   * those other processes hold, and the slots go round the endpoints (each one's first, then each one's
   * second, …), so one slow receiver never takes every slot (two processes claiming at the
   * same instant may each fill an endpoint's free share). Every due delivery is ranked on each call: the
   * cost grows with the backlog that is due now, not with history.
   */
  async claimDue(owner: string, now: string, leaseUntil: string, max: number, perEndpoint: number): Promise<ClaimedDelivery[]> {
    if (max <= 0) return [];
    const lock = this.dialect === "postgres" ? sql`for update of d skip locked` : sql``;
    const { rows } = await sql<{ event_id: string; endpoint_id: string }>`
      with ranked as (
        select d.event_id, d.endpoint_id, d.next_attempt_at,
          row_number() over (partition by d.endpoint_id order by d.next_attempt_at, d.event_id) as n
        from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
        where d.state = 'pending' and d.next_attempt_at <= ${now} and (d.lease_until is null or d.lease_until < ${now}) and e.disabled_at is null),
      busy as (
        select l.endpoint_id, count(*) as k from webhook_deliveries l
        where l.state = 'pending' and l.lease_until >= ${now} group by l.endpoint_id),
      fair as (
        select r.event_id, r.endpoint_id, r.n from ranked r left join busy b on b.endpoint_id = r.endpoint_id
        where r.n + coalesce(b.k, 0) <= ${perEndpoint})
      update webhook_deliveries as w set lease_owner = ${owner}, lease_until = ${leaseUntil}, attempts = w.attempts + 1, last_attempt_at = ${now}
      where (w.event_id, w.endpoint_id) in (
        select d.event_id, d.endpoint_id from webhook_deliveries d join fair f on f.event_id = d.event_id and f.endpoint_id = d.endpoint_id
        order by f.n, d.next_attempt_at limit ${max} ${lock})
      and w.state = 'pending' and (w.lease_until is null or w.lease_until < ${now})
      returning event_id, endpoint_id`.execute(this.db);
    if (rows.length === 0) return [];
    return (await this.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_outbox as o", "o.id", "d.event_id")
      .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
      .selectAll("d")
      .select(["o.type", "o.project_id", "o.object_id", "o.status", "o.occurred_at", "o.payload", "e.url", "e.secret_box"])
      .where("d.lease_owner", "=", owner)
      .where((eb) => eb.or(rows.map((r) => eb.and([eb("d.event_id", "=", r.event_id), eb("d.endpoint_id", "=", r.endpoint_id)]))))
      .execute()) as ClaimedDelivery[];
  }

  /**
   * Keeps the first rendering of each event's payload, so every endpoint and every attempt gets the
   * same bytes; answers the payload stored for each (another process's, if it rendered first).
   */
  async storePayloads(rendered: { eventId: string; payload: string }[]): Promise<Map<string, string>> {
    if (rendered.length === 0) return new Map();
    return this.db.transaction().execute(async (trx) => {
      for (const r of rendered) await trx.updateTable("webhook_outbox").set({ payload: r.payload }).where("id", "=", r.eventId).where("payload", "is", null).execute();
      const rows = await trx.selectFrom("webhook_outbox").select(["id", "payload"]).where("id", "in", rendered.map((r) => r.eventId)).execute();
      return new Map(rows.map((r) => [r.id, r.payload!]));
    });
  }

  /**
   * Records the outcomes of several attempts in one write, each only if `owner` still holds its lease.
   * A 2xx (`nextAttemptAt` unused) delivers and makes the endpoint healthy again. A failure schedules
   * the next attempt at `nextAttemptAt`, or with none fails the delivery; the endpoint's failing streak
   * starts then if it was healthy, and with `disableIfFailingSince` an endpoint failing since that time
   * or earlier is disabled. Answers, per outcome, whether it disabled its endpoint.
   */
  async recordOutcomes(owner: string, outcomes: AttemptOutcome[]): Promise<{ disabled: boolean }[]> {
    if (outcomes.length === 0) return [];
    return this.db.transaction().execute(async (trx) => {
      const answers: { disabled: boolean }[] = [];
      for (const o of outcomes) {
        const key = (q: any) => q.where("event_id", "=", o.eventId).where("endpoint_id", "=", o.endpointId).where("lease_owner", "=", owner);
        const lease = { lease_owner: null, lease_until: null, last_status: o.status };
        if (o.delivered) {
          const r = await key(trx.updateTable("webhook_deliveries").set({ ...lease, state: "delivered", delivered_at: o.at, last_error: null })).executeTakeFirst();
          if (r.numUpdatedRows > 0n) await trx.updateTable("webhook_endpoints").set({ failing_since: null }).where("id", "=", o.endpointId).where("failing_since", "is not", null).execute();
          answers.push({ disabled: false });
          continue;
        }
        const r = await key(trx.updateTable("webhook_deliveries").set({ ...lease, state: o.nextAttemptAt ? "pending" : "failed", next_attempt_at: o.nextAttemptAt ?? o.at, last_error: o.error.slice(0, 300) })).executeTakeFirst();
        if (r.numUpdatedRows === 0n) {
          answers.push({ disabled: false });
          continue;
        }
        await trx.updateTable("webhook_endpoints").set({ failing_since: o.at }).where("id", "=", o.endpointId).where("failing_since", "is", null).execute();
        if (!o.disableIfFailingSince) {
          answers.push({ disabled: false });
          continue;
        }
        const off = await trx
          .updateTable("webhook_endpoints")
          .set({ disabled_at: o.at, disabled_reason: `every delivery failed since ${o.disableIfFailingSince} or earlier; last: ${o.error.slice(0, 200)}` })
          .where("id", "=", o.endpointId)
          .where("disabled_at", "is", null)
          .where("failing_since", "<=", o.disableIfFailingSince)
          .executeTakeFirst();
        answers.push({ disabled: off.numUpdatedRows > 0n });
      }
      return answers;
    });
  }

  /**
   * Forgets events that happened before `before` and have no delivery still pending (all delivered or
   * given up), with their deliveries, at most `max` a call, oldest first. Returns how many went.
   */
  async prune(before: string, max: number): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
      const ids = (
        await trx
          .selectFrom("webhook_outbox as o")
          .select("o.id")
          .where("o.occurred_at", "<", before)
          .where((eb) => eb.not(eb.exists(eb.selectFrom("webhook_deliveries as d").select("d.event_id").whereRef("d.event_id", "=", "o.id").where("d.state", "=", "pending"))))
          .orderBy("o.seq")
          .limit(max)
          .execute()
      ).map((r) => r.id);
      if (ids.length === 0) return 0;
      await trx.deleteFrom("webhook_deliveries").where("event_id", "in", ids).execute();
      await trx.deleteFrom("webhook_outbox").where("id", "in", ids).execute();
      return ids.length;
    });
  }

  /** The earliest time a pending delivery to an enabled endpoint is due (tests step their clock to it). */
  async nextDueAt(): Promise<string | undefined> {
    const row = await this.db
      .selectFrom("webhook_deliveries as d")
      .innerJoin("webhook_endpoints as e", "e.id", "d.endpoint_id")
      .select((eb) => eb.fn.min("d.next_attempt_at").as("at"))
      .where("d.state", "=", "pending")
      .where("e.disabled_at", "is", null)
      .executeTakeFirst();
    return (row?.at as string | null) ?? undefined;
  }
}
