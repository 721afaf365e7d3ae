/**
 * Evidence of payments (migration 0030): one record per change of a payment that a dispute or an audit
 * would ask about — its creation (with the controls that admitted it), every status, every rail stage
 * (what was signed, sent, received and where it landed on-chain), every approval decision — written by
 * a trigger on `payments` in the same transaction as the change, whichever code path makes it (the
 * SQLite group commit, the PostgreSQL batch functions, a CLI command), as the webhook events are.
 *
 * Records are hash-chained per project: each carries the hash of the project's previous record, and its
 * own hash covers that and every field of its own (`evidenceHash`). The project's head (`evidence_heads`:
 * last number and hash) is updated in the same transaction, so two payments of one project cannot fork
 * the chain: SQLite has one writer; on PostgreSQL the trigger is deferred to the commit and takes the head
 * row's lock there, so the records of concurrent transactions (of any number of processes) are numbered
 * and chained in commit order, and the lock is held only for the commit's last statements.
 *
 * The body is the payment's row as the trigger saw it, as JSON text; its exact bytes are what is hashed,
 * so the two databases may spell their JSON differently and each record still verifies on its own. What admitted
 * the payment (its controls and windows) never changes after the hold: since migration 0045 only the `created`
 * record holds it, and the records of later changes leave it out instead of repeating it.
 */
import type { Db, Dialect } from "./db.ts";
import type { EvidenceTable } from "./schema.ts";
import { EVIDENCE_GENESIS, SQLITE_SHA256_FUNCTION } from "./evidenceHash.ts";

export type EvidenceRow = EvidenceTable;

/** The payment's columns a record's body holds, by JSON key (`json` columns are embedded as JSON). */
const BODY: [key: string, column: string, json?: true][] = [
  ["payment_id", "id"],
  ["rail", "rail"],
  ["status", "status"],
  ["amount_micros", "amount_micros"],
  ["fee_micros", "fee_micros"],
  ["amount_units", "amount_units"],
  ["fee_units", "fee_units"],
  ["currency", "currency"],
  ["recipient", "recipient"],
  ["idempotency_key", "idempotency_key"],
  ["token_id", "token_id"],
  ["admitted", "admitted_json", true],
  ["approval", "approval"],
  ["approval_until", "approval_until"],
  ["approval_decided_by", "approval_decided_by"],
  ["approval_decided_at", "approval_decided_at"],
  ["tx_hash", "tx_hash"],
  ["provider_ref", "provider_ref"],
  ["failure_code", "failure_code"],
  ["failure_reason", "failure_reason"],
  ["rail_state", "rail_state", true],
];

/** Keys only a payment's `created` record holds since migration 0045: what the hold wrote once and nothing changes. */
const CREATED_ONLY = new Set(["admitted"]);

/** The body's keys and columns: every one for a `created` record; for a change's, without CREATED_ONLY once `admittedOnce`. */
const bodyColumns = (created: boolean, admittedOnce: boolean) => (created || !admittedOnce ? BODY : BODY.filter(([k]) => !CREATED_ONLY.has(k)));

/** A change worth a record: these columns are the ones a record's body describes that can change. */
const WATCHED = ["status", "rail_state", "tx_hash", "provider_ref", "approval"];

const updatedAt = "coalesce(new.updated_at, new.created_at)";

/** SQLite's two triggers: the `created` record's, then the changes' (its body without CREATED_ONLY once `admittedOnce`). */
function sqliteTriggers(admittedOnce: boolean): [created: string, changed: string] {
  // A column that does not hold JSON (a rail state that no longer parses) is embedded as a string: the record is
  // still written, so such a payment can be ended by hand (services/resolveByHand.ts).
  const bodyOf = (created: boolean) => `json_object(${bodyColumns(created, admittedOnce).map(([k, c, j]) => `'${k}', ${j ? `case when json_valid(new.${c}) then json(new.${c}) else json_quote(new.${c}) end` : `new.${c}`}`).join(", ")})`;
  const record = (kind: string, at: string, body: string) => `
      insert or ignore into evidence_heads (project_id, seq, hash) values (new.project_id, 0, '${EVIDENCE_GENESIS}');
      insert into evidence (project_id, seq, payment_id, kind, at, body, prev_hash, hash)
        select new.project_id, h.seq + 1, new.id, r.kind, r.at, r.body, h.hash,
          ${SQLITE_SHA256_FUNCTION}(h.hash || char(10) || (h.seq + 1) || char(10) || new.project_id || char(10) || new.id || char(10) || r.kind || char(10) || r.at || char(10) || r.body)
        from evidence_heads h, (select ${kind} as kind, ${at} as at, ${body} as body) r where h.project_id = new.project_id;
      update evidence_heads set seq = seq + 1, hash = (select e.hash from evidence e where e.project_id = evidence_heads.project_id and e.seq = evidence_heads.seq + 1) where project_id = new.project_id;`;
  const kind = `case when old.status is not new.status then new.status when old.approval is not new.approval then 'approval_' || coalesce(new.approval, 'none') else 'progress' end`;
  return [
    `create trigger evidence_payment_created after insert on payments begin ${record("'created'", "new.created_at", bodyOf(true))} end`,
    `create trigger evidence_payment_changed after update of ${WATCHED.join(", ")} on payments
      when ${WATCHED.map((c) => `old.${c} is not new.${c}`).join(" or ")}
      begin ${record(kind, updatedAt, bodyOf(false))} end`,
  ];
}

/**
 * How PostgreSQL's evidence_record takes the project's head into v_seq (the record's number) and v_prev (the
 * previous hash), and how it writes the record's hash into it.
 */
type PgHeadWrites = { take: string; write: string };

/**
 * Migration 0030: the head's number moved by one update and its hash by a second, so each record left two versions
 * of the head row, in a transaction that may write dozens (a batch of holds, of resolutions).
 */
const HEAD_TWO_WRITES: PgHeadWrites = {
  take: `update evidence_heads set seq = seq + 1 where project_id = new.project_id returning seq, hash into v_seq, v_prev;
        if not found then
          insert into evidence_heads (project_id, seq, hash) values (new.project_id, 1, '${EVIDENCE_GENESIS}')
            on conflict (project_id) do update set seq = evidence_heads.seq + 1 returning seq, hash into v_seq, v_prev;
        end if;`,
  write: `update evidence_heads set hash = v_hash where project_id = new.project_id;`,
};

/**
 * Migration 0038: the head is locked and read (a new project's inserted first), and written once with the number
 * and the hash. The lock is the same row lock, taken at the same point of the commit, so the order is unchanged.
 */
const HEAD_ONE_WRITE: PgHeadWrites = {
  take: `select seq + 1, hash into v_seq, v_prev from evidence_heads where project_id = new.project_id for update;
        if not found then
          insert into evidence_heads (project_id, seq, hash) values (new.project_id, 0, '${EVIDENCE_GENESIS}') on conflict (project_id) do nothing;
          select seq + 1, hash into v_seq, v_prev from evidence_heads where project_id = new.project_id for update;
        end if;`,
  write: `update evidence_heads set seq = v_seq, hash = v_hash where project_id = new.project_id;`,
};

/** PostgreSQL's evidence_record function, with the head taken and written as `head` says, and the changes' body as `admittedOnce` says. */
function pgRecordFunction(head: PgHeadWrites, admittedOnce = false): string {
  // The rail state, which a defect or a hand edit may have left unparseable, goes through aw_json_or_text (a JSON
  // string then, as on SQLite); the other JSON columns are the service's own JSON.stringify.
  const json = (c: string) => (c === "rail_state" ? `aw_json_or_text(new.${c})` : `new.${c}::json`);
  const bodyOf = (created: boolean) => `json_build_object(${bodyColumns(created, admittedOnce).map(([k, c, j]) => `'${k}', ${j ? json(c) : `new.${c}`}`).join(", ")})::text`;
  const body = admittedOnce ? `case when tg_op = 'INSERT' then ${bodyOf(true)} else ${bodyOf(false)} end` : bodyOf(true);
  return `create or replace function evidence_record() returns trigger language plpgsql as $$
      declare v_seq bigint; v_prev text; v_kind text; v_at text; v_body text; v_hash text;
      begin
        if tg_op = 'INSERT' then v_kind := 'created'; v_at := new.created_at;
        elsif old.status is distinct from new.status then v_kind := new.status; v_at := ${updatedAt};
        elsif old.approval is distinct from new.approval then v_kind := 'approval_' || coalesce(new.approval, 'none'); v_at := ${updatedAt};
        else v_kind := 'progress'; v_at := ${updatedAt};
        end if;
        v_body := ${body};
        ${head.take}
        v_hash := encode(sha256(convert_to(v_prev || E'\\n' || v_seq || E'\\n' || new.project_id || E'\\n' || new.id || E'\\n' || v_kind || E'\\n' || v_at || E'\\n' || v_body, 'UTF8')), 'hex');
        insert into evidence (project_id, seq, payment_id, kind, at, body, prev_hash, hash) values (new.project_id, v_seq, new.id, v_kind, v_at, v_body, v_prev, v_hash);
        ${head.write}
        return null;
      end $$`;
}

/** Migration 0038's statement on PostgreSQL (none on SQLite, whose single writer needs no lock). */
export function evidenceHeadOneWriteMigration(dialect: Dialect): string[] {
  return dialect === "postgres" ? [pgRecordFunction(HEAD_ONE_WRITE)] : [];
}

/** Migration 0045's statements: the records of a payment's later changes leave out what only its `created` record holds. */
export function evidenceAdmittedOnceMigration(dialect: Dialect): string[] {
  if (dialect === "postgres") return [pgRecordFunction(HEAD_ONE_WRITE, true)];
  return ["drop trigger evidence_payment_changed", sqliteTriggers(true)[1]];
}

function pgTriggers(): string[] {
  return [
    `create or replace function aw_json_or_text(t text) returns json language plpgsql immutable as $$
      begin return t::json; exception when invalid_text_representation then return to_json(t); end $$`,
    pgRecordFunction(HEAD_TWO_WRITES),
    // Deferred to the commit: the head's lock is taken there, before the counters' deferred moves (spendDays.ts), and
    // held only for the commit's last statements.
    `create constraint trigger evidence_payment_created after insert on payments deferrable initially deferred for each row execute function evidence_record()`,
    `create constraint trigger evidence_payment_changed after update of ${WATCHED.join(", ")} on payments deferrable initially deferred for each row
      when (${WATCHED.map((c) => `old.${c} is distinct from new.${c}`).join(" or ")}) execute function evidence_record()`,
  ];
}

/** The statements of migration 0030 after its tables. */
export function evidenceTriggers(dialect: Dialect): string[] {
  return dialect === "postgres" ? pgTriggers() : sqliteTriggers(false);
}

/** The head of a project's chain: its last record's number and hash (seq 0 and the genesis hash: none yet). */
export type EvidenceHead = { seq: number; hash: string };

const STATUSES = new Set(["pending", "processing", "completed", "failed", "reversed"]);

/** One payment as the accounting export lists it. */
export type ExportedPayment = {
  id: string;
  created_at: string;
  rail: string;
  status: string;
  amount_units: number;
  fee_units: number;
  currency: string;
  amount_micros: number;
  fee_micros: number;
  recipient: string;
  tx_hash: string | null;
  provider_ref: string | null;
  failure_code: string | null;
  status_history: { status: string; at: string }[];
  /** The hash of the payment's last evidence record (null: made before evidence was kept). */
  evidence_hash: string | null;
};

export class EvidenceStore {
  constructor(private readonly db: Db) {}

  /** The records of one payment of the project, oldest first. */
  ofPayment(projectId: string, paymentId: string): Promise<EvidenceRow[]> {
    return this.db.selectFrom("evidence").selectAll().where("project_id", "=", projectId).where("payment_id", "=", paymentId).orderBy("seq").execute();
  }

  /** Up to `limit` records of the project after number `afterSeq`, in order (a page of the chain). */
  page(projectId: string, afterSeq: number, limit: number): Promise<EvidenceRow[]> {
    return this.db.selectFrom("evidence").selectAll().where("project_id", "=", projectId).where("seq", ">", afterSeq).orderBy("seq").limit(limit).execute();
  }

  /**
   * Up to `limit` payments of the project after `after` (by creation, then id), each with its status history
   * (from the records: created and every status) and its last record's hash: a page of the accounting export.
   */
  async paymentsPage(projectId: string, after: { createdAt: string; id: string } | null, limit: number): Promise<ExportedPayment[]> {
    let q = this.db
      .selectFrom("payments")
      .select(["id", "created_at", "rail", "status", "amount_units", "fee_units", "currency", "amount_micros", "fee_micros", "recipient", "tx_hash", "provider_ref", "failure_code"])
      .where("project_id", "=", projectId);
    if (after) q = q.where((eb) => eb.or([eb("created_at", ">", after.createdAt), eb.and([eb("created_at", "=", after.createdAt), eb("id", ">", after.id)])]));
    const rows = await q.orderBy("created_at").orderBy("id").limit(limit).execute();
    if (rows.length === 0) return [];
    const records = await this.db
      .selectFrom("evidence")
      .select(["payment_id", "seq", "kind", "at", "hash"])
      .where("project_id", "=", projectId)
      .where("payment_id", "in", rows.map((r) => r.id))
      .orderBy("seq")
      .execute();
    const of = new Map<string, { history: { status: string; at: string }[]; hash: string | null }>();
    for (const r of records) {
      const e = of.get(r.payment_id) ?? { history: [], hash: null };
      if (r.kind === "created" || STATUSES.has(r.kind)) e.history.push({ status: r.kind, at: r.at });
      e.hash = r.hash;
      of.set(r.payment_id, e);
    }
    return rows.map((r) => ({ ...r, status_history: of.get(r.id)?.history ?? [], evidence_hash: of.get(r.id)?.hash ?? null }));
  }

  async head(projectId: string): Promise<EvidenceHead> {
    const row = await this.db.selectFrom("evidence_heads").select(["seq", "hash"]).where("project_id", "=", projectId).executeTakeFirst();
    return row ? { seq: Number(row.seq), hash: row.hash } : { seq: 0, hash: EVIDENCE_GENESIS };
  }
}
