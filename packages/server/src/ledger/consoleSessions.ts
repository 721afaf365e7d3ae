/**
 * Console sessions, one-time sign-in codes and one-time views. Only SHA-256 hashes of session ids, codes and
 * view ids are stored, so a copy of the database opens no session and no view (whose content is sealed too). A session names the operator's admin credential or one API token; that
 * row is read on every use, so revoking (or expiring) it ends its sessions at once.
 */
import { createHash } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "./schema.ts";

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest("hex");

export type ConsoleSessionRow = {
  kind: "operator" | "token";
  token_id: string | null;
  expires_at: string;
  /** For operator sessions: the admin credential as it is now. */
  admin?: { id: string; name: string; role: string; revoked_at: string | null } | undefined;
  /** For token sessions: the token as it is now. */
  token?: { project_id: string; permissions: string; expires_at: string | null; revoked_at: string | null; spending_controls: string | null } | undefined;
};

export class ConsoleSessions {
  constructor(private readonly db: Kysely<Database>) {}

  async create(id: string, kind: "operator" | "token", tokenId: string | null, createdAt: string, expiresAt: string, adminCredentialId: string | null = null): Promise<void> {
    await this.db.insertInto("console_sessions").values({ id_hash: sha256(id), kind, token_id: tokenId, admin_credential_id: adminCredentialId, created_at: createdAt, expires_at: expiresAt }).execute();
  }

  async get(id: string, now: string): Promise<ConsoleSessionRow | undefined> {
    const row = await this.db
      .selectFrom("console_sessions as s")
      .leftJoin("api_tokens as t", "t.id", "s.token_id")
      .leftJoin("admin_credentials as a", "a.id", "s.admin_credential_id")
      .select(["s.kind", "s.token_id", "s.expires_at", "t.project_id", "t.permissions", "t.expires_at as token_expires_at", "t.revoked_at", "t.spending_controls", "a.id as admin_id", "a.name as admin_name", "a.role as admin_role", "a.revoked_at as admin_revoked_at"])
      .where("s.id_hash", "=", sha256(id))
      .where("s.expires_at", ">", now)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      kind: row.kind as "operator" | "token",
      token_id: row.token_id,
      expires_at: row.expires_at,
      admin: row.admin_id ? { id: row.admin_id, name: row.admin_name ?? "", role: row.admin_role ?? "admin", revoked_at: row.admin_revoked_at ?? null } : undefined,
      token: row.project_id ? { project_id: row.project_id, permissions: row.permissions!, expires_at: row.token_expires_at ?? null, revoked_at: row.revoked_at ?? null, spending_controls: row.spending_controls ?? null } : undefined,
    };
  }

  async delete(id: string): Promise<void> {
    await this.db.deleteFrom("console_sessions").where("id_hash", "=", sha256(id)).execute();
  }

  /** Drops expired sessions, used or expired codes and views never opened. */
  async prune(now: string): Promise<void> {
    await this.db.deleteFrom("console_sessions").where("expires_at", "<=", now).execute();
    await this.db.deleteFrom("console_signin_codes").where("expires_at", "<=", now).execute();
    await this.db.deleteFrom("console_one_time_views").where("expires_at", "<=", now).execute();
  }

  /** Keeps a sealed view for the session `sessionId` until `expiresAt`, under the id `viewId`. */
  async putView(view: { viewId: string; sessionId: string; projectId: string; kind: "token" | "webhook"; sealed: string; expiresAt: string }): Promise<void> {
    await this.db
      .insertInto("console_one_time_views")
      .values({ id_hash: sha256(view.viewId), session_hash: sha256(view.sessionId), project_id: view.projectId, kind: view.kind, sealed: view.sealed, expires_at: view.expiresAt })
      .execute();
  }

  /**
   * The sealed view, once, to the session that created it: the statement that reads it deletes it. Another
   * session, project or kind gets nothing and leaves it in place.
   */
  async takeView(view: { viewId: string; sessionId: string; projectId: string; kind: "token" | "webhook" }, now: string): Promise<string | undefined> {
    const row = await this.db
      .deleteFrom("console_one_time_views")
      .where("id_hash", "=", sha256(view.viewId))
      .where("session_hash", "=", sha256(view.sessionId))
      .where("project_id", "=", view.projectId)
      .where("kind", "=", view.kind)
      .where("expires_at", ">", now)
      .returning("sealed")
      .executeTakeFirst();
    return row?.sealed;
  }

  async createCode(code: string, tokenId: string, expiresAt: string): Promise<void> {
    await this.db.insertInto("console_signin_codes").values({ code_hash: sha256(code), token_id: tokenId, expires_at: expiresAt }).execute();
  }

  /** The code's token as it is now, once: the code's row is deleted by the statement that reads it. */
  async redeemCode(code: string, now: string) {
    const row = await this.db.deleteFrom("console_signin_codes").where("code_hash", "=", sha256(code)).where("expires_at", ">", now).returning("token_id").executeTakeFirst();
    if (!row) return undefined;
    return this.db.selectFrom("api_tokens").select(["id", "project_id", "expires_at", "revoked_at"]).where("id", "=", row.token_id).executeTakeFirst();
  }
}
