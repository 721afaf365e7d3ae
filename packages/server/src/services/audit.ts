/**
 * The audit log as operators read it (`GET /v1/admin/audit`, `agentwallet audit list`, the console's Audit
 * page) and its bound by age. Entries are written by the ledger in the transaction of each change
 * (ledger/auditLog.ts); nothing here, nor anywhere, changes one.
 */
import { limits } from "@agentwallet/api";
import type { AuditEntry } from "../domain/audit.ts";
import type { AuditStore } from "../ledger/ports.ts";

type Deps = { ledger: { audit: AuditStore } };

/** The one JSON shape of an entry. */
export function auditJson(e: AuditEntry) {
  return { seq: e.seq, at: e.at, actor: e.actor, action: e.action, project_id: e.projectId, target_id: e.targetId, before: e.before, after: e.after };
}

/** A page of entries, newest first, and the cursor of the next (null on the last). */
export async function listAudit(deps: Deps, q: { projectId?: string | undefined; action?: string | undefined; before?: number | undefined; limit?: number | undefined }) {
  const limit = Math.min(limits.adminAuditMax, Math.max(1, Math.trunc(q.limit ?? limits.adminAuditDefault) || limits.adminAuditDefault));
  // One more than asked tells whether a next page exists without a count.
  const rows = await deps.ledger.audit.list({ ...(q.projectId ? { projectId: q.projectId } : {}), ...(q.action ? { action: q.action } : {}), ...(q.before ? { beforeSeq: q.before } : {}), limit: limit + 1 });
  const page = rows.slice(0, limit);
  return { data: page.map(auditJson), next_before: rows.length > limit ? page.at(-1)!.seq : null };
}

/** Entries deleted per prune pass at most, so a pass never holds the database for long. */
export const AUDIT_PRUNE_BATCH_MAX = 1_000;

/** Deletes up to a batch of entries older than the retention; how many went. Called by the housekeeping loop. */
export async function pruneAudit(deps: Deps & { clock: () => Date }, retentionDays: number): Promise<number> {
  const before = new Date(deps.clock().getTime() - retentionDays * 86_400_000).toISOString();
  return deps.ledger.audit.prune(before, AUDIT_PRUNE_BATCH_MAX);
}
