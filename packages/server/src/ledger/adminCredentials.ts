/**
 * Operators' admin credentials: the rows behind `agentwallet admin credentials …` and the admin API's
 * authentication. Only the SHA-256 of a credential is stored (as for API tokens), so a copy of the
 * database authenticates nobody.
 */
import type { Kysely } from "kysely";
import type { AdminCredentialsTable, Database } from "./schema.ts";
import type { Actor } from "../domain/audit.ts";
import { withAudit } from "./auditLog.ts";

export type AdminCredentialRow = AdminCredentialsTable;

export class AdminCredentials {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: AdminCredentialRow, actor?: Actor): Promise<void> {
    await withAudit(this.db, actor, row.created_at, async (trx) => {
      await trx.insertInto("admin_credentials").values(row).execute();
      return { result: undefined, change: { action: "credential.created", projectId: null, targetId: row.id, before: null, after: { name: row.name, role: row.role, display_prefix: row.display_prefix } } };
    });
  }

  findByHash(hash: string): Promise<AdminCredentialRow | undefined> {
    return this.db.selectFrom("admin_credentials").selectAll().where("credential_hash", "=", hash).executeTakeFirst();
  }

  get(id: string): Promise<AdminCredentialRow | undefined> {
    return this.db.selectFrom("admin_credentials").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** Every credential, oldest first (an operator has a handful; bounded by `max` anyway). */
  list(max: number): Promise<AdminCredentialRow[]> {
    return this.db.selectFrom("admin_credentials").selectAll().orderBy("created_at").orderBy("id").limit(max).execute();
  }

  /** Revokes an active credential; false if there is none with that id or it was revoked already. */
  async revoke(id: string, at: string, actor?: Actor): Promise<boolean> {
    return withAudit(this.db, actor, at, async (trx) => {
      const r = await trx.updateTable("admin_credentials").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null).returning(["name", "role"]).executeTakeFirst();
      return { result: !!r, change: r ? { action: "credential.revoked", projectId: null, targetId: id, before: { name: r.name, role: r.role, revoked_at: null }, after: { revoked_at: at } } : null };
    });
  }
}
