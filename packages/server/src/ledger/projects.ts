/**
 * Projects: created with their balance row and the index of their wallet, paused, given their deposit
 * address. A Ledger's `projects`.
 */
import { sql } from "kysely";
import type { Clock, IdGenerator } from "../ids.ts";
import type { Db } from "./db.ts";
import type { Plan, ProjectsTable } from "./schema.ts";
import { enqueueEvent } from "./webhookOutbox.ts";
import type { Actor } from "../domain/audit.ts";
import { withAudit } from "./auditLog.ts";

export type ProjectRow = ProjectsTable;

/** A project's deposit address as recorded, with the wallet index it was derived at. */
export type RecordedWallet = { projectId: string; walletIndex: number; address: string };

export class Projects {
  constructor(
    private readonly db: Db,
    private readonly clock: Clock,
    private readonly newId: IdGenerator,
  ) {}

  async create(input: { name: string; plan: Plan }): Promise<ProjectRow> {
    return this.db.transaction().execute(async (trx) => {
      // A counter row serialises wallet index allocation: each project's BIP-44 index is unique forever.
      await trx.insertInto("kv").values({ key: "next_wallet_index", value: "0" }).onConflict((oc) => oc.doNothing()).execute();
      const counter = await trx
        .updateTable("kv")
        .set({ value: sql`cast(cast(value as integer) + 1 as text)` })
        .where("key", "=", "next_wallet_index")
        .returning("value")
        .executeTakeFirstOrThrow();
      const project: ProjectRow = {
        id: this.newId("prj"),
        name: input.name,
        plan: input.plan,
        paused: 0,
        wallet_index: Number(counter.value) - 1,
        wallet_address: null,
        created_at: this.clock().toISOString(),
        spending_controls: null,
        wallet_frozen_at: null,
      };
      await trx.insertInto("projects").values(project).execute();
      await trx.insertInto("balances").values({ project_id: project.id, available_micros: 0, held_micros: 0, pending_micros: 0, total_funded_micros: 0, total_spent_micros: 0, tx_count: 0 }).execute();
      return project;
    });
  }

  get(id: string): Promise<ProjectRow | undefined> {
    return this.db.selectFrom("projects").selectAll().where("id", "=", id).executeTakeFirst();
  }

  list(): Promise<ProjectRow[]> {
    return this.db.selectFrom("projects").selectAll().orderBy("created_at").orderBy("id").execute();
  }

  /** Pauses or resumes; with an actor, the state before is read in the transaction and both go into its audit entry. */
  async setPaused(id: string, paused: boolean, actor?: Actor): Promise<boolean> {
    return withAudit(this.db, actor, this.clock().toISOString(), async (trx) => {
      const before = await trx.selectFrom("projects").select("paused").where("id", "=", id).executeTakeFirst();
      if (!before) return { result: false, change: null };
      await trx.updateTable("projects").set({ paused: paused ? 1 : 0 }).where("id", "=", id).execute();
      return { result: true, change: { action: paused ? "project.paused" : "project.resumed", projectId: id, targetId: id, before: { paused: Boolean(Number(before.paused)) }, after: { paused } } };
    });
  }

  /**
   * Marks the project's wallet frozen (`frozenAt`) or spendable again (null), and writes the
   * `wallet.frozen` / `wallet.unfrozen` event for its webhook endpoints in the same transaction. Only a
   * change writes anything: answers whether this call changed it (another process may have first).
   */
  async setWalletFrozen(id: string, frozenAt: string | null, event: { at: string; payload: (frozenAt: string | null) => string }): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const r = await trx
        .updateTable("projects")
        .set({ wallet_frozen_at: frozenAt })
        .where("id", "=", id)
        .where("wallet_frozen_at", frozenAt === null ? "is not" : "is", null)
        .executeTakeFirst();
      if (r.numUpdatedRows === 0n) return false;
      const type = frozenAt === null ? "wallet.unfrozen" : "wallet.frozen";
      await enqueueEvent(trx, { projectId: id, type, objectId: id, status: frozenAt === null ? "active" : "frozen", occurredAt: event.at, payload: event.payload(frozenAt) });
      return true;
    });
  }

  /** How many projects' wallets are frozen now (the metric). */
  async countFrozen(): Promise<number> {
    const r = await this.db.selectFrom("projects").select((eb) => eb.fn.countAll<number | string>().as("n")).where("wallet_frozen_at", "is not", null).executeTakeFirstOrThrow();
    return Number(r.n);
  }

  /** The first project whose deposit address is recorded: the master key must still derive it (services/masterKeyCheck.ts). */
  async firstRecordedWallet(): Promise<RecordedWallet | undefined> {
    const row = await this.db.selectFrom("projects").select(["id", "wallet_index", "wallet_address"]).where("wallet_address", "is not", null).orderBy("wallet_index").limit(1).executeTakeFirst();
    return row?.wallet_address ? { projectId: row.id, walletIndex: row.wallet_index, address: row.wallet_address } : undefined;
  }

  /** Stores the derived deposit address once; later calls keep the first one. */
  async setWalletAddress(id: string, address: string): Promise<string> {
    await this.db.updateTable("projects").set({ wallet_address: address }).where("id", "=", id).where("wallet_address", "is", null).execute();
    const row = await this.db.selectFrom("projects").select("wallet_address").where("id", "=", id).executeTakeFirstOrThrow();
    return row.wallet_address!;
  }

  /** Whether `address` (checksummed) is the wallet of a project. */
  async isWallet(address: string): Promise<boolean> {
    return (await this.db.selectFrom("projects").select("id").where("wallet_address", "=", address).executeTakeFirst()) !== undefined;
  }

  async withWallets(): Promise<{ id: string; wallet_address: string; wallet_frozen_at: string | null }[]> {
    const rows = await this.db.selectFrom("projects").select(["id", "wallet_address", "wallet_frozen_at"]).where("wallet_address", "is not", null).execute();
    return rows as { id: string; wallet_address: string; wallet_frozen_at: string | null }[];
  }
}
