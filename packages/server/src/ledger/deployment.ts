/**
 * The deployment record: one row saying whether this database holds a live or a test deployment, and on
 * which chain, written when the deployment's first server (or `agentwallet migrate`) runs on it. The
 * mode of everything issued from the database (token prefixes, the CLI's rules) is read here, never from
 * the shell of whoever runs a command. A Ledger's `deployment`.
 */
import type { Db } from "./db.ts";

export type DeploymentMode = "live" | "test";
export type DeploymentRecord = { mode: DeploymentMode; chain_id: number; created_at: string };

export class Deployment {
  constructor(private readonly db: Db) {}

  /** The record, or undefined for a database no server has run on since the record was added (migration 0020). */
  async get(): Promise<DeploymentRecord | undefined> {
    const row = await this.db.selectFrom("deployment").select(["mode", "chain_id", "created_at"]).where("id", "=", 1).executeTakeFirst();
    return row ? { mode: row.mode as DeploymentMode, chain_id: Number(row.chain_id), created_at: row.created_at } : undefined;
  }

  /**
   * Writes the record unless one exists, and returns the one that is there: two processes starting at once
   * on a new database agree on whichever wrote first.
   */
  async record(r: DeploymentRecord): Promise<DeploymentRecord> {
    await this.db.insertInto("deployment").values({ id: 1, ...r }).onConflict((oc) => oc.column("id").doNothing()).execute();
    return (await this.get())!;
  }

  /** Whether any API token of this database was issued with the given mode's prefix (`aw_live_…`). */
  async hasTokensOf(mode: DeploymentMode): Promise<boolean> {
    // `_` matches any one character in LIKE: harmless here, no other prefix has this shape.
    const row = await this.db.selectFrom("api_tokens").select("id").where("display_prefix", "like", `aw_${mode}_%`).limit(1).executeTakeFirst();
    return row !== undefined;
  }
}
