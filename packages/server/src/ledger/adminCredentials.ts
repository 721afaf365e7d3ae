/**
 * Operators' admin credentials: the rows behind `agentwallet admin credentials …` and the admin API's
 * authentication. Only the SHA-256 of a credential is stored (as for API tokens), so a copy of the
 * database authenticates nobody.
 */
import type { Kysely } from "kysely";
import type { AdminCredentialsTable, Database } from "./schema.ts";

export type AdminCredentialRow = AdminCredentialsTable;

export class AdminCredentials {
  constructor(private readonly db: Kysely<Database>) {}

  async insert(row: AdminCredentialRow): Promise<void> {
    await this.db.insertInto("admin_credentials").values(row).execute();
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
  async revoke(id: string, at: string): Promise<boolean> {
    const r = await this.db.updateTable("admin_credentials").set({ revoked_at: at }).where("id", "=", id).where("revoked_at", "is", null).executeTakeFirst();
    return r.numUpdatedRows > 0n;
  }
}
