/**
 * The audit log: one row per operator or token-management change (who, what, before → after, when, from
 * where). A store that changes something an operator does takes the actor and writes the row with
 * `recordAudit` (or `auditInsert` inside an atomic write) in the very transaction of the change, so the
 * change and its entry commit or roll back together. Rows are never updated (a trigger of migration 0028
 * refuses it on both databases); the only delete is the retention prune below.
 */
import type { CompiledQuery, Transaction } from "kysely";
import type { Actor, AuditChange, AuditEntry, AdminRole } from "../domain/audit.ts";
import type { Db } from "./db.ts";
import type { AuditLogTable, Database } from "./schema.ts";

type Writer = Db | Transaction<Database>;

function rowOf(actor: Actor, change: AuditChange, at: string): Omit<AuditLogTable, "seq"> {
  return {
    at,
    actor_id: actor.id,
    actor_name: actor.name.slice(0, 200),
    actor_role: actor.role,
    ip: actor.ip,
    action: change.action,
    project_id: change.projectId,
    target_id: change.targetId,
    before_json: change.before === undefined ? null : JSON.stringify(change.before),
    after_json: change.after === undefined ? null : JSON.stringify(change.after),
  };
}

/** Writes the entry of a change on the transaction (or connection) that makes it. */
export async function recordAudit(db: Writer, actor: Actor, change: AuditChange, at: string): Promise<void> {
  await db.insertInto("audit_log").values(rowOf(actor, change, at)).execute();
}

/** The entry's insert, compiled, for a write made of compiled statements (atomicWrites.ts). */
export function auditInsert(db: Db, actor: Actor, change: AuditChange, at: string): CompiledQuery {
  return db.insertInto("audit_log").values(rowOf(actor, change, at)).compile();
}

/** Runs a change and, when an actor is named, its entry in one transaction; `body` answers the result and what changed (null: nothing did). */
export async function withAudit<T>(db: Db, actor: Actor | undefined, at: string, body: (trx: Writer) => Promise<{ result: T; change: AuditChange | null }>): Promise<T> {
  if (!actor) return (await body(db)).result;
  return db.transaction().execute(async (trx) => {
    const { result, change } = await body(trx);
    if (change) await recordAudit(trx, actor, change, at);
    return result;
  });
}

export type AuditQuery = { projectId?: string; action?: string; actorId?: string; beforeSeq?: number; limit: number };

export class AuditLog {
  constructor(private readonly db: Db) {}

  /** Entries newest first, a page of at most `limit` below `beforeSeq` (a keyset cursor: deep pages cost what the first does). */
  async list(q: AuditQuery): Promise<AuditEntry[]> {
    let s = this.db.selectFrom("audit_log").selectAll().orderBy("seq", "desc").limit(q.limit);
    if (q.projectId) s = s.where("project_id", "=", q.projectId);
    if (q.action) s = s.where("action", "=", q.action);
    if (q.actorId) s = s.where("actor_id", "=", q.actorId);
    if (q.beforeSeq !== undefined) s = s.where("seq", "<", q.beforeSeq);
    return (await s.execute()).map((r) => ({
      seq: Number(r.seq),
      at: r.at,
      actor: { id: r.actor_id, name: r.actor_name, role: r.actor_role as AdminRole | null, ip: r.ip },
      action: r.action as AuditEntry["action"],
      projectId: r.project_id,
      targetId: r.target_id,
      before: r.before_json === null ? null : JSON.parse(r.before_json),
      after: r.after_json === null ? null : JSON.parse(r.after_json),
    }));
  }

  /** Deletes at most `max` entries older than `before` (ISO), oldest first; how many went. The retention prune, and the only delete. */
  async prune(before: string, max: number): Promise<number> {
    const r = await this.db
      .deleteFrom("audit_log")
      .where("seq", "in", (eb) => eb.selectFrom("audit_log").select("seq").where("at", "<", before).orderBy("seq").limit(max))
      .executeTakeFirst();
    return Number(r.numDeletedRows);
  }
}
