/**
 * Schema migrations, run on start and by `agentwallet migrate`. Written once for both dialects;
 * the only difference is how an auto-incrementing sequence column is declared.
 */
import { type Kysely, type Migration, Migrator, sql } from "kysely";
import type { Dialect } from "./db.ts";
import { PG_BATCH_FUNCTIONS } from "./pgFunctions.ts";

function migrations(dialect: Dialect): Record<string, Migration> {
  // `seq` gives every row a strictly increasing number: the stable tie-break for ordering.
  const seqType = dialect === "postgres" ? "bigserial" : "integer";
  const seq = (c: any) => (dialect === "postgres" ? c.primaryKey() : c.primaryKey().autoIncrement());
  return {
    "0001_ledger": {
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("projects")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("name", "text", (c) => c.notNull())
          .addColumn("plan", "text", (c) => c.notNull().check(sql`plan in ('free','pro','business')`))
          .addColumn("paused", "integer", (c) => c.notNull().defaultTo(0))
          .addColumn("wallet_index", "integer", (c) => c.notNull().unique())
          .addColumn("wallet_address", "text", (c) => c.unique())
          .addColumn("created_at", "text", (c) => c.notNull())
          .execute();
        await db.schema
          .createTable("api_tokens")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
          .addColumn("token_hash", "text", (c) => c.notNull().unique())
          .addColumn("display_prefix", "text", (c) => c.notNull())
          .addColumn("permissions", "text", (c) => c.notNull())
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("expires_at", "text")
          .addColumn("revoked_at", "text")
          .execute();
        await db.schema.createIndex("api_tokens_project").on("api_tokens").column("project_id").execute();
        await db.schema
          .createTable("balances")
          .addColumn("project_id", "text", (c) => c.primaryKey().references("projects.id"))
          .addColumn("available_micros", "bigint", (c) => c.notNull().defaultTo(0).check(sql`available_micros >= 0`))
          .addColumn("held_micros", "bigint", (c) => c.notNull().defaultTo(0).check(sql`held_micros >= 0`))
          .addColumn("pending_micros", "bigint", (c) => c.notNull().defaultTo(0).check(sql`pending_micros >= 0`))
          .addColumn("total_funded_micros", "bigint", (c) => c.notNull().defaultTo(0))
          .addColumn("total_spent_micros", "bigint", (c) => c.notNull().defaultTo(0))
          .addColumn("tx_count", "bigint", (c) => c.notNull().defaultTo(0))
          .execute();
        await db.schema
          .createTable("transactions")
          .addColumn("seq", seqType as any, seq)
          .addColumn("id", "text", (c) => c.notNull().unique())
          .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
          .addColumn("payment_id", "text")
          .addColumn("type", "text", (c) => c.notNull())
          .addColumn("status", "text", (c) => c.notNull())
          .addColumn("amount", "bigint", (c) => c.notNull())
          .addColumn("currency", "text", (c) => c.notNull())
          .addColumn("description", "text")
          .addColumn("merchant_name", "text")
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("completed_at", "text")
          .execute();
        // The list query: newest first by creation time, seq as the stable tie-break.
        await db.schema
          .createIndex("transactions_project_created")
          .on("transactions")
          .columns(["project_id", "created_at desc", "seq desc"])
          .execute();
        await db.schema.createIndex("transactions_payment").on("transactions").column("payment_id").execute();
        await db.schema
          .createTable("journal_entries")
          .addColumn("seq", seqType as any, seq)
          .addColumn("movement_id", "text", (c) => c.notNull())
          .addColumn("kind", "text", (c) => c.notNull())
          .addColumn("account", "text", (c) => c.notNull())
          .addColumn("project_id", "text")
          .addColumn("amount_micros", "bigint", (c) => c.notNull())
          .addColumn("created_at", "text", (c) => c.notNull())
          .execute();
        await db.schema.createIndex("journal_entries_account").on("journal_entries").column("account").execute();
        await db.schema.createIndex("journal_entries_movement").on("journal_entries").column("movement_id").execute();
        await db.schema
          .createTable("payments")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
          .addColumn("rail", "text", (c) => c.notNull())
          .addColumn("status", "text", (c) => c.notNull())
          .addColumn("amount_units", "bigint", (c) => c.notNull())
          .addColumn("fee_units", "bigint", (c) => c.notNull())
          .addColumn("amount_micros", "bigint", (c) => c.notNull())
          .addColumn("fee_micros", "bigint", (c) => c.notNull())
          .addColumn("currency", "text", (c) => c.notNull())
          .addColumn("recipient", "text", (c) => c.notNull())
          .addColumn("recipient_json", "text")
          .addColumn("description", "text")
          .addColumn("idempotency_key", "text")
          .addColumn("fee_txn_id", "text", (c) => c.notNull())
          .addColumn("tx_hash", "text")
          .addColumn("provider_ref", "text")
          .addColumn("estimated_arrival", "text")
          .addColumn("response_json", "text")
          .addColumn("rail_state", "text")
          .addColumn("failure_reason", "text")
          .addColumn("in_flight_until", "text")
          .addColumn("lease_owner", "text")
          .addColumn("lease_until", "text")
          .addColumn("next_attempt_at", "text", (c) => c.notNull())
          .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("updated_at", "text", (c) => c.notNull())
          .addColumn("completed_at", "text")
          .execute();
        // At most one payment per (project, idempotency key); NULL keys never conflict.
        await db.schema
          .createIndex("payments_idempotency")
          .on("payments")
          .columns(["project_id", "idempotency_key"])
          .unique()
          .execute();
        await db.schema.createIndex("payments_open").on("payments").columns(["status", "next_attempt_at"]).execute();
        await db.schema
          .createTable("deposits")
          .addColumn("chain", "text", (c) => c.notNull())
          .addColumn("tx_hash", "text", (c) => c.notNull())
          .addColumn("log_index", "integer", (c) => c.notNull())
          .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
          .addColumn("to_address", "text", (c) => c.notNull())
          .addColumn("from_address", "text", (c) => c.notNull())
          .addColumn("amount_micros", "bigint", (c) => c.notNull())
          .addColumn("block_number", "bigint", (c) => c.notNull())
          .addColumn("block_hash", "text", (c) => c.notNull())
          .addColumn("status", "text", (c) => c.notNull())
          .addColumn("txn_id", "text")
          .addColumn("seen_at", "text", (c) => c.notNull())
          .addColumn("credited_at", "text")
          // At most one credit per on-chain log, whatever replays or overlapping scans happen.
          .addPrimaryKeyConstraint("deposits_pk", ["chain", "tx_hash", "log_index"])
          .execute();
        await db.schema.createIndex("deposits_status").on("deposits").columns(["status", "block_number"]).execute();
        await db.schema
          .createTable("kv")
          .addColumn("key", "text", (c) => c.primaryKey())
          .addColumn("value", "text", (c) => c.notNull())
          .execute();
        await db.schema
          .createTable("relayer_txs")
          .addColumn("nonce", "bigint", (c) => c.notNull())
          .addColumn("relayer", "text", (c) => c.notNull())
          .addColumn("payment_id", "text", (c) => c.notNull())
          .addColumn("raw_tx", "text", (c) => c.notNull())
          .addColumn("tx_hash", "text", (c) => c.notNull())
          .addColumn("created_at", "text", (c) => c.notNull())
          .addPrimaryKeyConstraint("relayer_txs_pk", ["relayer", "nonce"])
          .execute();
        await db.schema.createIndex("relayer_txs_payment").on("relayer_txs").column("payment_id").execute();
        await db.schema
          .createTable("webhook_events")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("source", "text", (c) => c.notNull())
          .addColumn("received_at", "text", (c) => c.notNull())
          .execute();
      },
    },
    "0002_transaction_positions": {
      // Each project's transactions are numbered 1..N in the order they were recorded, in the same
      // DB transaction that bumps the project's tx_count. A page at any offset is then a range of
      // positions, read from the index in O(page size) instead of walking every skipped row.
      async up(db: Kysely<any>) {
        await db.schema.alterTable("transactions").addColumn("pos", "bigint").execute();
        await backfillTransactionPositions(db);
        await db.schema.createIndex("transactions_project_pos").on("transactions").columns(["project_id", "pos"]).unique().execute();
        await db.schema.dropIndex("transactions_project_created").execute();
      },
    },
    "0003_postgres_batches": {
      // PostgreSQL: the functions that run a batch of holds or of resolutions in one round trip
      // (pgFunctions.ts). SQLite batches in its group commit and needs none.
      async up(db: Kysely<any>) {
        if (dialect !== "postgres") return;
        for (const fn of PG_BATCH_FUNCTIONS) await sql.raw(fn).execute(db);
      },
    },
  };
}

/** Numbers rows without a position by creation time, then insertion sequence, per project. */
export async function backfillTransactionPositions(db: Kysely<any>): Promise<void> {
  await sql`
    update transactions set pos = r.rn
    from (select seq, row_number() over (partition by project_id order by created_at, seq) as rn from transactions) as r
    where transactions.seq = r.seq and transactions.pos is null`.execute(db);
}

/** Migrates to `target` (a migration name) or, without one, to the latest. */
export async function migrateToLatest(db: Kysely<any>, dialect: Dialect, target?: string): Promise<string[]> {
  // Kysely looks for its bookkeeping tables across all schemas; pin them to the schema this
  // connection writes to, or two deployments sharing one database would see each other's.
  const schema =
    dialect === "postgres" ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s : undefined;
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => migrations(dialect) },
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
  const { error, results } = target ? await migrator.migrateTo(target) : await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
