/**
 * Schema migrations, run on start and by `agentwallet migrate`. Written once for both dialects;
 * the only difference is how an auto-incrementing sequence column is declared.
 */
import { type Kysely, type Migration, Migrator, sql } from "kysely";
import type { Dialect } from "./db.ts";
import { approvalWebhookTriggers, statusHistoryTriggers, webhookTriggers } from "./webhookOutbox.ts";
import { PG_ARRAY_ROWS_HOLD_FUNCTIONS, PG_BATCH_FUNCTIONS, PG_BATCH_ROWS_HOLD_FUNCTIONS, PG_COUNTING_HOLD_FUNCTIONS, PG_DAYS_HOLD_FUNCTIONS, PG_NESTED_HOLD_FUNCTIONS, PG_RESOLVE_BATCH_0004, PG_RESOLVE_BATCH_0039, PG_RESOLVE_BATCH_0041, PG_SPENDING_FUNCTIONS, SQLITE_RELEASE_SPENDING_TRIGGER } from "./pgFunctions.ts";
import { countedWindows } from "../domain/spending.ts";
import { evidenceAdmittedOnceMigration, evidenceHeadOneWriteMigration, evidenceTriggers } from "./evidence.ts";
import { spendDaysMigration, spendDaysUpdateByRowMigration, spendDaysUpdateCountedMigration } from "./spendDays.ts";

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
    "0004_failure_codes": {
      // Why a payment failed or was reversed, for programs: a stable code (failureCodes.ts) beside the
      // human message that `failure_reason` already holds. `step_errors` counts the failed steps of a
      // payment, so retries back off and stop at a bound (settlement/settlementRetry.ts). PostgreSQL: the
      // resolution batch stores the code too.
      async up(db: Kysely<any>) {
        await db.schema.alterTable("payments").addColumn("failure_code", "text").execute();
        await db.schema.alterTable("payments").addColumn("step_errors", "integer", (c) => c.notNull().defaultTo(0)).execute();
        if (dialect === "postgres") await sql.raw(PG_RESOLVE_BATCH_0004).execute(db);
      },
    },
    "0008_transaction_reads": {
      // GET /v1/transactions/{id} and the list's filters and cursor (decisions.md, "Filtered lists"):
      // the payment's metadata; one index per (project, type, status) ordered by creation, which every
      // filtered page reads as one range per (type, status) pair; the deposit behind a `usdc_fund` row.
      async up(db: Kysely<any>) {
        await db.schema.alterTable("payments").addColumn("metadata", "text").execute();
        await db.schema
          .createIndex("transactions_project_type_status_created")
          .on("transactions")
          .columns(["project_id", "type", "status", "created_at", "pos"])
          .execute();
        await db.schema.createIndex("deposits_txn").on("deposits").column("txn_id").execute();
        if (dialect === "sqlite") for (const statement of SQLITE_TRANSACTION_COUNTS) await sql.raw(statement).execute(db);
      },
    },
    "0011_console_sessions": {
      // The web console's sessions and one-time sign-in codes, by hash (ledger/consoleSessions.ts).
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("console_sessions")
          .addColumn("id_hash", "text", (c) => c.primaryKey())
          .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('operator','token')`))
          .addColumn("token_id", "text", (c) => c.references("api_tokens.id"))
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("expires_at", "text", (c) => c.notNull())
          .execute();
        await db.schema.createIndex("console_sessions_expires").on("console_sessions").column("expires_at").execute();
        await db.schema
          .createTable("console_signin_codes")
          .addColumn("code_hash", "text", (c) => c.primaryKey())
          .addColumn("token_id", "text", (c) => c.notNull().references("api_tokens.id"))
          .addColumn("expires_at", "text", (c) => c.notNull())
          .execute();
      },
    },
    "0014_approval_decisions": {
      // Who decided an approval and when (services/approvals.ts): the console and the CLI name the person's
      // session or tool; shown on the approvals page and in a payment's history.
      async up(db: Kysely<any>) {
        for (const column of ["approval_decided_by", "approval_decided_at"]) {
          await db.schema.alterTable("payments").addColumn(column, "text").execute();
        }
      },
    },
    "0016_x402_completed": {
      // The completed x402 payments of the last hour, newest first (settlement/lostLegs.ts looks for settlements
      // the chain lost). Partial: only those rows are in it, so no other payment's write maintains it.
      async up(db: Kysely<any>) {
        await db.schema
          .createIndex("payments_x402_completed")
          .on("payments")
          .column("completed_at")
          .where(sql.ref("rail"), "=", "x402")
          .where(sql.ref("status"), "=", "completed")
          .execute();
      },
    },
    "0017_webhook_event_objects": {
      // A transaction's webhook deliveries (the console's transaction page): the outbox by object. Numbered
      // after 0016 so a database that ran 0016 takes it in order.
      async up(db: Kysely<any>) {
        await db.schema.createIndex("webhook_outbox_object").on("webhook_outbox").columns(["project_id", "object_id"]).execute();
      },
    },
    "0018_idempotency_keys": {
      // Keys claimed before a payment row owns them get a table of their own (ledger/idempotencyKeys.ts),
      // and the x402 rail's claims and kept replies move there from `kv` (decisions.md, "One payment core").
      // Numbered after 0017 so a database that ran 0017 takes it in order.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("idempotency_keys")
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("key", "text", (c) => c.notNull())
          .addColumn("state", "text", (c) => c.notNull().check(sql`state in ('running','reply')`))
          .addColumn("token", "text")
          .addColumn("until", "text", (c) => c.notNull())
          .addColumn("reply_json", "text")
          .addPrimaryKeyConstraint("idempotency_keys_pk", ["project_id", "key"])
          .execute();
        await db.schema.createIndex("idempotency_keys_until").on("idempotency_keys").column("until").execute();
        await moveKvIdempotencyKeys(db);
      },
    },
    "0021_frozen_wallets": {
      // Since when USDC's blacklister has frozen the project's deposit address (null: spendable). Set and
      // cleared by what the chain says (rails/walletFreeze.ts); read with the token on every request.
      async up(db: Kysely<any>) {
        await db.schema.alterTable("projects").addColumn("wallet_frozen_at", "text").execute();
      },
    },
    "0019_bank_returns_watch": {
      // Completed bank payments stay watched for returns (rails/fiat/returnWatch.ts): one state row per
      // provider (the cursor of its list of changed payouts and the lease of the process reading it), when
      // each payment was last read (the fallback sweep), the refund's transaction a provider named, and the
      // refunds seen on-chain from an off-ramp (reconcile names the ones no payment accounts for).
      async up(db: Kysely<any>) {
        for (const column of ["return_checked_at", "refund_tx_hash"]) await db.schema.alterTable("payments").addColumn(column, "text").execute();
        await db.schema
          .createIndex("payments_fiat_completed")
          .on("payments")
          .column("completed_at")
          .where(sql.ref("rail"), "=", "fiat")
          .where(sql.ref("status"), "=", "completed")
          .execute();
        await db.schema.createIndex("payments_refund_tx").on("payments").column("refund_tx_hash").execute();
        await db.schema
          .createTable("return_watch")
          .addColumn("provider", "text", (c) => c.primaryKey())
          .addColumn("cursor_ms", "bigint")
          .addColumn("sweep_from", "text")
          .addColumn("lease_owner", "text")
          .addColumn("lease_until", "text")
          .execute();
        await db.schema
          .createTable("provider_refunds")
          .addColumn("chain", "text", (c) => c.notNull())
          .addColumn("tx_hash", "text", (c) => c.notNull())
          .addColumn("log_index", "integer", (c) => c.notNull())
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("from_address", "text", (c) => c.notNull())
          .addColumn("amount_micros", "bigint", (c) => c.notNull())
          .addColumn("block_number", "bigint", (c) => c.notNull())
          .addColumn("seen_at", "text", (c) => c.notNull())
          .addPrimaryKeyConstraint("provider_refunds_pk", ["chain", "tx_hash", "log_index"])
          .execute();
      },
    },
    "0023_mask_bank_accounts": {
      // A bank payment keeps its whole account number only sealed, and only until its payout is created
      // (domain/bankAccount.ts): a trigger forgets it at any final status, whichever path ends the payment
      // (denied, expired, refused, failed, completed), and rows written before are masked here. Open ones
      // still awaiting their payout keep it until a process with the key seals it (deps.ts).
      async up(db: Kysely<any>) {
        for (const statement of forgetBankAccountTrigger(dialect)) await sql.raw(statement).execute(db);
        await sql.raw(maskBankAccountsSql(dialect)).execute(db);
        await maskSandboxPayouts(db);
      },
    },
    "0020_deployment": {
      // The deployment's mode (live or test) and chain, one row, written by the first server or `migrate`
      // that runs with a configuration (ledger/deployment.ts, services/deployment.ts); a database that
      // existed before gets it at its next start (decisions.md, "The deployment's mode").
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("deployment")
          .addColumn("id", "integer", (c) => c.primaryKey().check(sql`id = 1`))
          .addColumn("mode", "text", (c) => c.notNull().check(sql`mode in ('live','test')`))
          .addColumn("chain_id", "integer", (c) => c.notNull())
          .addColumn("created_at", "text", (c) => c.notNull())
          .execute();
      },
    },
    "0007_spending_controls": {
      // Spending controls (ledger/spending.ts): controls on tokens and projects, window counters moved
      // in the hold's write, the windows each payment was counted in (given back when it fails or is
      // reversed, by a trigger), approvals as a state of the held payment, and a bounded refusal log.
      async up(db: Kysely<any>) {
        await db.schema.alterTable("api_tokens").addColumn("spending_controls", "text").execute();
        await db.schema.alterTable("projects").addColumn("spending_controls", "text").execute();
        for (const column of ["token_id", "spend_windows", "approval", "approval_until"]) {
          await db.schema.alterTable("payments").addColumn(column, "text").execute();
        }
        await db.schema.createIndex("payments_approval").on("payments").columns(["approval", "project_id"]).execute();
        await db.schema
          .createTable("spend_windows")
          .addColumn("scope_id", "text", (c) => c.notNull())
          .addColumn("kind", "text", (c) => c.notNull())
          .addColumn("window_start", "text", (c) => c.notNull())
          .addColumn("spent_micros", "bigint", (c) => c.notNull().check(sql`spent_micros >= 0`))
          .addPrimaryKeyConstraint("spend_windows_pk", ["scope_id", "kind", "window_start"])
          .execute();
        await db.schema
          .createTable("spending_refusals")
          .addColumn("seq", seqType as any, seq)
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("token_id", "text")
          .addColumn("code", "text", (c) => c.notNull())
          .addColumn("detail", "text", (c) => c.notNull())
          .addColumn("rail", "text", (c) => c.notNull())
          .addColumn("recipient", "text", (c) => c.notNull())
          .addColumn("amount_micros", "bigint")
          .addColumn("created_at", "text", (c) => c.notNull())
          .execute();
        await db.schema.createIndex("spending_refusals_project").on("spending_refusals").columns(["project_id", "seq"]).execute();
        if (dialect === "postgres") for (const fn of PG_SPENDING_FUNCTIONS) await sql.raw(fn).execute(db);
        else await sql.raw(SQLITE_RELEASE_SPENDING_TRIGGER).execute(db);
      },
    },
    "0022_spending_windows": {
      // Window counters count every payment, with controls or none (domain/spending.ts): a limited window
      // without a row is first written as the sum of its payments (the index below finds them), so a
      // limit set mid-window counts what was spent before it. The counters kept so far missed payments
      // of tokens without controls, so they go (the next judged hold writes each again from the
      // ledger), and each payment that can still fail or be reversed lists every window it is in, for
      // the release trigger. Payments made before this by tokens without controls name no token: they
      // count in their project's windows only.
      async up(db: Kysely<any>) {
        await db.schema.createIndex("payments_project_created").on("payments").columns(["project_id", "created_at"]).execute();
        await db.deleteFrom("spend_windows").execute();
        await listCountedWindows(db);
        if (dialect === "postgres") for (const fn of PG_COUNTING_HOLD_FUNCTIONS) await sql.raw(fn).execute(db);
      },
    },
    "0012_webhooks": {
      // Webhooks to clients (webhookOutbox.ts): endpoints, the outbox and its deliveries, and the
      // triggers that write an event in the same transaction as the status change it reports. A seen
      // deposit gets the id of its future `usdc_fund` transaction now, so deposit.pending names it.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("webhook_endpoints")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("project_id", "text", (c) => c.notNull().references("projects.id"))
          .addColumn("url", "text", (c) => c.notNull())
          .addColumn("events", "text")
          .addColumn("secret_box", "text", (c) => c.notNull())
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("disabled_at", "text")
          .addColumn("disabled_reason", "text")
          .addColumn("failing_since", "text")
          .addColumn("deleted_at", "text")
          .execute();
        await db.schema.createIndex("webhook_endpoints_project").on("webhook_endpoints").columns(["project_id", "disabled_at"]).execute();
        await db.schema
          .createTable("webhook_outbox")
          .addColumn("seq", seqType as any, seq)
          .addColumn("id", "text", (c) => c.notNull().unique())
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("type", "text", (c) => c.notNull())
          .addColumn("object_id", "text", (c) => c.notNull())
          .addColumn("status", "text", (c) => c.notNull())
          .addColumn("occurred_at", "text", (c) => c.notNull())
          .addColumn("payload", "text")
          .execute();
        await db.schema
          .createTable("webhook_deliveries")
          .addColumn("event_id", "text", (c) => c.notNull())
          .addColumn("endpoint_id", "text", (c) => c.notNull())
          .addColumn("state", "text", (c) => c.notNull().check(sql`state in ('pending','delivered','failed')`))
          .addColumn("attempts", "integer", (c) => c.notNull().defaultTo(0))
          .addColumn("next_attempt_at", "text", (c) => c.notNull())
          .addColumn("lease_owner", "text")
          .addColumn("lease_until", "text")
          .addColumn("last_attempt_at", "text")
          .addColumn("last_status", "integer")
          .addColumn("last_error", "text")
          .addColumn("delivered_at", "text")
          .addPrimaryKeyConstraint("webhook_deliveries_pk", ["endpoint_id", "event_id"])
          .execute();
        await db.schema.createIndex("webhook_deliveries_due").on("webhook_deliveries").columns(["state", "next_attempt_at"]).execute();
        await db.schema.createIndex("webhook_deliveries_event").on("webhook_deliveries").column("event_id").execute();
        for (const statement of webhookTriggers(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0013_admin_credentials": {
      // Operators' admin credentials (services/adminCredentials.ts): only their SHA-256 is stored, as for
      // API tokens. Landed after 0014: it only adds a table, so the order it runs in changes nothing.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("admin_credentials")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("name", "text", (c) => c.notNull())
          .addColumn("credential_hash", "text", (c) => c.notNull().unique())
          .addColumn("display_prefix", "text", (c) => c.notNull())
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("revoked_at", "text")
          .execute();
      },
    },
    "0013_admin_sessions": {
      // An operator's console session names the admin credential it signed in with, so revoking the
      // credential ends the session (ledger/consoleSessions.ts).
      async up(db: Kysely<any>) {
        await db.schema.alterTable("console_sessions").addColumn("admin_credential_id", "text", (c) => c.references("admin_credentials.id")).execute();
      },
    },
    "0024_console_one_time_views": {
      // What a console form created and shows once (a new token, an endpoint's signing secret), between the
      // form's POST and the page it redirects to: sealed under the deployment's key, bound to the session that
      // created it, taken by the first view (ledger/consoleSessions.ts; decisions.md, "One-time views").
      // And what the console's status history shows: every status transition the webhooks report, recorded by
      // the same triggers in the same transaction for every project (webhookOutbox.ts; decisions.md, "Status
      // history"). Rows written before this migration have none; the console derives theirs as before.
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("status_history")
          .addColumn("seq", seqType as any, (c: any) => c.primaryKey())
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("object_id", "text", (c) => c.notNull())
          .addColumn("type", "text", (c) => c.notNull())
          .addColumn("status", "text", (c) => c.notNull())
          .addColumn("at", "text", (c) => c.notNull())
          .execute();
        await db.schema.createIndex("status_history_object").on("status_history").column("object_id").execute();
        for (const statement of statusHistoryTriggers(dialect)) await sql.raw(statement).execute(db);
        await db.schema
          .createTable("console_one_time_views")
          .addColumn("id_hash", "text", (c) => c.primaryKey())
          .addColumn("session_hash", "text", (c) => c.notNull())
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("kind", "text", (c) => c.notNull().check(sql`kind in ('token','webhook')`))
          .addColumn("sealed", "text", (c) => c.notNull())
          .addColumn("expires_at", "text", (c) => c.notNull())
          .execute();
        await db.schema.createIndex("console_one_time_views_expires").on("console_one_time_views").column("expires_at").execute();
      },
    },
    "0025_postgres_transaction_counts": {
      // PostgreSQL keeps the per-day counters SQLite keeps since 0008, so a filtered list's total_count is a
      // sum over them instead of a count of every matching row (PG_TRANSACTION_COUNTS; decisions.md,
      // "Filtered lists"). The triggers come before the backfill: creating them locks out writers of
      // `transactions` until this migration commits, so no row is counted twice or missed.
      async up(db: Kysely<any>) {
        if (dialect !== "postgres") return;
        for (const statement of PG_TRANSACTION_COUNTS) await sql.raw(statement).execute(db);
      },
    },
    "0026_postgres_transactions_created": {
      // PostgreSQL: a list filtered by creation time alone reads one range of this index, and its edge days
      // are counted on it (transactionReads.ts). SQLite reads its ranges per (type, status) pair as before.
      async up(db: Kysely<any>) {
        if (dialect !== "postgres") return;
        await db.schema.createIndex("transactions_project_created_pos").on("transactions").columns(["project_id", "created_at", "pos"]).execute();
      },
    },
    "0027_token_delegation": {
      // Child tokens (services/delegation.ts): a token's name, the token that created it, its depth and its
      // allowance; and `token_lineage`, every (ancestor, descendant) pair, so a hold sums an ancestor's
      // window over its descendants' payments and a revocation reaches every descendant in one statement.
      // PostgreSQL's hold function seeds a token's window with its descendants' payments too
      // (PG_NESTED_HOLD_FUNCTIONS; decisions.md, "Nested budgets").
      async up(db: Kysely<any>) {
        await db.schema.alterTable("api_tokens").addColumn("name", "text").execute();
        await db.schema.alterTable("api_tokens").addColumn("parent_id", "text").execute();
        await db.schema.alterTable("api_tokens").addColumn("depth", "integer", (c) => c.notNull().defaultTo(0)).execute();
        await db.schema.alterTable("api_tokens").addColumn("allowance_micros", "bigint").execute();
        await db.schema.createIndex("api_tokens_parent").on("api_tokens").column("parent_id").execute();
        await db.schema
          .createTable("token_lineage")
          .addColumn("ancestor_id", "text", (c) => c.notNull())
          .addColumn("descendant_id", "text", (c) => c.notNull())
          .addColumn("depth", "integer", (c) => c.notNull())
          .addPrimaryKeyConstraint("token_lineage_pk", ["ancestor_id", "descendant_id"])
          .execute();
        await db.schema.createIndex("token_lineage_descendant").on("token_lineage").columns(["descendant_id", "depth"]).execute();
        if (dialect === "postgres") for (const fn of PG_NESTED_HOLD_FUNCTIONS) await sql.raw(fn).execute(db);
      },
    },
    "0029_quotes": {
      // Quotes of `POST /v1/quote` (ledger/quotes.ts), found again by id when a payment names one; and the
      // triggers that write payment.approved / payment.denied in the same write as the decision (webhookOutbox.ts).
      async up(db: Kysely<any>) {
        await db.schema
          .createTable("quotes")
          .addColumn("id", "text", (c) => c.primaryKey())
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("token_id", "text", (c) => c.notNull())
          .addColumn("url", "text", (c) => c.notNull())
          .addColumn("method", "text", (c) => c.notNull())
          .addColumn("body_hash", "text", (c) => c.notNull())
          .addColumn("protocol", "text", (c) => c.notNull())
          .addColumn("scheme", "text", (c) => c.notNull())
          .addColumn("network", "text", (c) => c.notNull())
          .addColumn("asset", "text", (c) => c.notNull())
          .addColumn("pay_to", "text", (c) => c.notNull())
          .addColumn("amount_micros", "bigint", (c) => c.notNull())
          .addColumn("verdict", "text", (c) => c.notNull())
          .addColumn("refusal_code", "text")
          .addColumn("created_at", "text", (c) => c.notNull())
          .addColumn("expires_at", "text", (c) => c.notNull())
          .execute();
        await db.schema.createIndex("quotes_expires").on("quotes").column("expires_at").execute();
        for (const statement of approvalWebhookTriggers(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0030_evidence": {
      // Evidence per payment (evidence.ts): records hash-chained per project, each project's head, what
      // admitted a payment, and the triggers that write a record in the same transaction as each change.
      // Payments made before this migration have no records; their chain starts at their next change.
      async up(db: Kysely<any>) {
        await db.schema.alterTable("payments").addColumn("admitted_json", "text").execute();
        await db.schema
          .createTable("evidence")
          .addColumn("project_id", "text", (c) => c.notNull())
          .addColumn("seq", "bigint", (c) => c.notNull())
          .addColumn("payment_id", "text", (c) => c.notNull())
          .addColumn("kind", "text", (c) => c.notNull())
          .addColumn("at", "text", (c) => c.notNull())
          .addColumn("body", "text", (c) => c.notNull())
          .addColumn("prev_hash", "text", (c) => c.notNull())
          .addColumn("hash", "text", (c) => c.notNull())
          .addPrimaryKeyConstraint("evidence_pk", ["project_id", "seq"])
          .execute();
        await db.schema.createIndex("evidence_payment").on("evidence").columns(["payment_id", "seq"]).execute();
        await db.schema
          .createTable("evidence_heads")
          .addColumn("project_id", "text", (c) => c.primaryKey())
          .addColumn("seq", "bigint", (c) => c.notNull())
          .addColumn("hash", "text", (c) => c.notNull())
          .execute();
        for (const statement of evidenceTriggers(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0032_spend_days": {
      // Spend per (project, day, token, rail, counterparty), kept by triggers with every payment change and
      // backfilled from the payments made so far (spendDays.ts): the console's Spend page and a limit window
      // without its counter row read these instead of the payments. Triggers first, then the backfill, as 0025.
      async up(db: Kysely<any>) {
        for (const statement of spendDaysMigration(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0028_roles_and_audit": {
      // Teams: an admin credential's role (credentials made before are admin, as they could do everything);
      // a decision's name and reason kept on the payment; and the audit log (ledger/auditLog.ts), whose rows
      // a trigger refuses to update on both databases (decisions.md, "The audit log").
      async up(db: Kysely<any>) {
        await db.schema.alterTable("admin_credentials").addColumn("role", "text", (c) => c.notNull().defaultTo("admin").check(sql`role in ('viewer','approver','admin')`)).execute();
        await db.schema.alterTable("payments").addColumn("approval_decided_by_name", "text").execute();
        await db.schema.alterTable("payments").addColumn("approval_reason", "text").execute();
        await db.schema
          .createTable("audit_log")
          .addColumn("seq", seqType as any, (c: any) => seq(c))
          .addColumn("at", "text", (c) => c.notNull())
          .addColumn("actor_id", "text", (c) => c.notNull())
          .addColumn("actor_name", "text", (c) => c.notNull())
          .addColumn("actor_role", "text")
          .addColumn("ip", "text")
          .addColumn("action", "text", (c) => c.notNull())
          .addColumn("project_id", "text")
          .addColumn("target_id", "text", (c) => c.notNull())
          .addColumn("before_json", "text")
          .addColumn("after_json", "text")
          .execute();
        await db.schema.createIndex("audit_log_project_seq").on("audit_log").columns(["project_id", "seq"]).execute();
        await db.schema.createIndex("audit_log_at").on("audit_log").column("at").execute();
        for (const statement of AUDIT_LOG_NO_UPDATE[dialect]) await sql.raw(statement).execute(db);
      },
    },
    "0031_console_transaction_list": {
      // The console's list (ledger/consoleTransactions.ts): an agent's payments are one range per token,
      // newest first; SQLite reads the unfiltered list by time and position as PostgreSQL does (0026).
      async up(db: Kysely<any>) {
        await db.schema.createIndex("payments_project_token_created").on("payments").columns(["project_id", "token_id", "created_at"]).execute();
        if (dialect === "sqlite") await db.schema.createIndex("transactions_project_created_pos").on("transactions").columns(["project_id", "created_at", "pos"]).execute();
      },
    },
    "0033_refusal_limits": {
      // What a limit refusal measured (domain/spending.ts `LimitBreach`), beside its detail: the console words a
      // refusal from these numbers, not from the detail's prose. Null on the rows written before, and for other codes.
      async up(db: Kysely<any>) {
        for (const column of ["rule", "rule_level", "rule_owner_id"]) await db.schema.alterTable("spending_refusals").addColumn(column, "text").execute();
        for (const column of ["limit_micros", "spent_micros", "remaining_micros"]) await db.schema.alterTable("spending_refusals").addColumn(column, "bigint").execute();
      },
    },
    "0034_spend_days_update_by_row": {
      // PostgreSQL: the spend-day counters' UPDATE trigger runs only for a row whose counted figures change (spendDays.ts).
      async up(db: Kysely<any>) {
        for (const statement of spendDaysUpdateByRowMigration(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0035_spend_days_update_counted": {
      // SQLite: the spend-day counters' UPDATE trigger runs only when what is counted changes, as PostgreSQL's (spendDays.ts).
      async up(db: Kysely<any>) {
        for (const statement of spendDaysUpdateCountedMigration(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0036_window_seed_from_days": {
      // PostgreSQL: the hold function seeds a limited window without a row from the day counters, not the payments
      // (PG_DAYS_HOLD_FUNCTIONS). SQLite's hold is the service's code and seeds the same way (payments.ts windowSeed).
      async up(db: Kysely<any>) {
        if (dialect === "postgres") for (const fn of PG_DAYS_HOLD_FUNCTIONS) await sql.raw(fn).execute(db);
      },
    },
    "0037_hold_rows_per_batch": {
      // PostgreSQL: the hold function inserts a batch's held payments, transactions and journal entries with one
      // statement per table, so the counters' statement triggers run once per batch (PG_BATCH_ROWS_HOLD_FUNCTIONS).
      async up(db: Kysely<any>) {
        if (dialect === "postgres") for (const fn of PG_BATCH_ROWS_HOLD_FUNCTIONS) await sql.raw(fn).execute(db);
      },
    },
    "0038_evidence_head_one_write": {
      // PostgreSQL: an evidence record writes its project's head once, number and hash together (evidence.ts).
      async up(db: Kysely<any>) {
        for (const statement of evidenceHeadOneWriteMigration(dialect)) await sql.raw(statement).execute(db);
      },
    },
    "0039_resolve_transactions_per_batch": {
      // PostgreSQL: the resolution batch updates its payments' transactions with one statement (PG_RESOLVE_BATCH_0039).
      async up(db: Kysely<any>) {
        if (dialect === "postgres") await sql.raw(PG_RESOLVE_BATCH_0039).execute(db);
      },
    },
    "0040_hold_rows_in_arrays": {
      // PostgreSQL: the hold function collects a batch's held rows in jsonb arrays appended in place, not in one jsonb
      // value copied at each append (PG_ARRAY_ROWS_HOLD_FUNCTIONS).
      async up(db: Kysely<any>) {
        if (dialect === "postgres") for (const fn of PG_ARRAY_ROWS_HOLD_FUNCTIONS) await sql.raw(fn).execute(db);
      },
    },
    "0041_resolve_with_rail_state": {
      // PostgreSQL: a resolution in the batch may store the payment's rail state with it (PG_RESOLVE_BATCH_0041).
      async up(db: Kysely<any>) {
        if (dialect === "postgres") await sql.raw(PG_RESOLVE_BATCH_0041).execute(db);
      },
    },
    "0042_relayer_txs_by_hash": {
      // A relayed payment whose transaction the node no longer knows reads the stored transaction by its hash
      // (onchainLeg.checkRelayed). Without an index that read scanned every signed transaction kept (~35 KB each, for
      // ever), once per payment of the lost transaction, just when the chain had lost it. One entry a batch.
      async up(db: Kysely<any>) {
        await db.schema.createIndex("relayer_txs_tx_hash").on("relayer_txs").column("tx_hash").execute();
      },
    },
    "0043_relayer_txs_to_forget": {
      // Housekeeping forgets a relayer transaction's signed bytes a day after it was stored (relayerNonces.forgetSignedBytes):
      // it finds them, oldest first, in this index, which holds only the transactions whose bytes are still kept.
      async up(db: Kysely<any>) {
        await db.schema.createIndex("relayer_txs_kept").on("relayer_txs").column("created_at").where(sql.ref("raw_tx"), "<>", "").execute();
      },
    },
    "0044_payments_sparse_indexes": {
      // `approval` and `refund_tx_hash` are null on almost every payment, yet their indexes (0011, 0019) held an entry
      // for each row, and on PostgreSQL one more for each row version: a payment's status changes are not HOT updates
      // (status is indexed), so every one of them inserted into both. Every read of them names a value (approval =,
      // approval in, refund_tx_hash =), which the planner knows excludes null: partial indexes serve them all.
      async up(db: Kysely<any>) {
        await db.schema.dropIndex("payments_approval").execute();
        await db.schema.createIndex("payments_approval").on("payments").columns(["approval", "project_id"]).where(sql.ref("approval"), "is not", null).execute();
        await db.schema.dropIndex("payments_refund_tx").execute();
        await db.schema.createIndex("payments_refund_tx").on("payments").column("refund_tx_hash").where(sql.ref("refund_tx_hash"), "is not", null).execute();
      },
    },
    "0045_evidence_admitted_once": {
      // What admitted a payment (its controls and windows, up to 1.2 KB for a token three levels deep) is written once by
      // the hold and never changes, yet every later record of the payment repeated it, parsed, hashed and stored again:
      // only the `created` record holds it now (evidence.ts). Records already written keep their bytes and their hashes.
      async up(db: Kysely<any>) {
        for (const statement of evidenceAdmittedOnceMigration(dialect)) await sql.raw(statement).execute(db);
      },
    },
  };
}

/** Refuses any UPDATE of an audit entry, whoever asks (a pruning DELETE stays possible: decisions.md, "The audit log"). */
const AUDIT_LOG_NO_UPDATE: Record<Dialect, string[]> = {
  sqlite: [`create trigger audit_log_no_update before update on audit_log begin select raise(abort, 'audit_log entries are never changed'); end`],
  postgres: [
    `create or replace function audit_log_no_update() returns trigger language plpgsql as $$ begin raise exception 'audit_log entries are never changed'; end $$`,
    `create trigger audit_log_no_update before update on audit_log for each row execute function audit_log_no_update()`,
  ],
};

/**
 * SQLite: the number of transactions per (project, type, status, UTC day), kept by triggers in the
 * same transaction as every insert and status change of a transaction row, whichever code path makes
 * it. A filtered list's total_count is then a sum over these rows plus an index count of the two edge
 * days of a time range, instead of a count of every matching row (30 ms at 1M). PostgreSQL keeps the
 * same counters since migration 0025 (PG_TRANSACTION_COUNTS; decisions.md, "Filtered lists").
 */
const SQLITE_TRANSACTION_COUNTS = [
  `create table transaction_counts (
     project_id text not null, type text not null, status text not null, day text not null, n integer not null,
     primary key (project_id, day, type, status)) without rowid`,
  `insert into transaction_counts (project_id, type, status, day, n)
     select project_id, type, status, substr(created_at, 1, 10), count(*) from transactions group by 1, 2, 3, 4`,
  `create trigger transaction_counts_insert after insert on transactions begin
     insert into transaction_counts (project_id, type, status, day, n) values (new.project_id, new.type, new.status, substr(new.created_at, 1, 10), 1)
       on conflict (project_id, day, type, status) do update set n = n + 1;
   end`,
  `create trigger transaction_counts_update after update of status, type, created_at, project_id on transactions
     when old.status is not new.status or old.type is not new.type or old.created_at is not new.created_at or old.project_id is not new.project_id begin
     update transaction_counts set n = n - 1
       where project_id = old.project_id and day = substr(old.created_at, 1, 10) and type = old.type and status = old.status;
     insert into transaction_counts (project_id, type, status, day, n) values (new.project_id, new.type, new.status, substr(new.created_at, 1, 10), 1)
       on conflict (project_id, day, type, status) do update set n = n + 1;
   end`,
  `create trigger transaction_counts_delete after delete on transactions begin
     update transaction_counts set n = n - 1
       where project_id = old.project_id and day = substr(old.created_at, 1, 10) and type = old.type and status = old.status;
   end`,
];

/**
 * PostgreSQL: the same counters as SQLITE_TRANSACTION_COUNTS, kept by triggers in the same transaction as
 * every insert, update and delete of a transaction row. A statement notes its changes per counter in
 * `transaction_count_changes` (under the writing transaction's id; no other writer touches those rows),
 * and at commit a deferred trigger moves them into `transaction_counts` in one statement, in counter-key
 * order. So counter rows are locked only at commit and always in the same order: two writers of one
 * project wait for each other there at most briefly, never both ways, whatever order their statements
 * changed rows in. The notes table is unlogged: its rows never outlive the transaction that wrote them.
 */
const PG_TRANSACTION_COUNTS = [
  `create table transaction_counts (
     project_id text not null, type text not null, status text not null, day text not null, n bigint not null,
     primary key (project_id, day, type, status))`,
  `create unlogged table transaction_count_changes (
     xid bigint not null, project_id text not null, type text not null, status text not null, day text not null, n bigint not null)`,
  `create index transaction_count_changes_xid on transaction_count_changes (xid)`,
  `create function transaction_counts_note() returns trigger language plpgsql as $fn$
begin
  if tg_op = 'INSERT' then
    insert into transaction_count_changes (xid, project_id, type, status, day, n)
      select txid_current(), project_id, type, status, substr(created_at, 1, 10), count(*) from new_rows group by 2, 3, 4, 5;
  elsif tg_op = 'DELETE' then
    insert into transaction_count_changes (xid, project_id, type, status, day, n)
      select txid_current(), project_id, type, status, substr(created_at, 1, 10), -count(*) from old_rows group by 2, 3, 4, 5;
  else
    insert into transaction_count_changes (xid, project_id, type, status, day, n)
      select txid_current(), project_id, type, status, day, sum(n) from (
        select project_id, type, status, substr(created_at, 1, 10) as day, -1 as n from old_rows
        union all
        select project_id, type, status, substr(created_at, 1, 10), 1 from new_rows) as c
      group by 2, 3, 4, 5 having sum(n) <> 0;
  end if;
  return null;
end
$fn$`,
  `create function transaction_counts_apply() returns trigger language plpgsql as $fn$
begin
  with moved as (delete from transaction_count_changes where xid = txid_current() returning project_id, type, status, day, n)
  insert into transaction_counts (project_id, type, status, day, n)
    select project_id, type, status, day, sum(n) from moved group by 1, 2, 3, 4 order by 1, 4, 2, 3
    on conflict (project_id, day, type, status) do update set n = transaction_counts.n + excluded.n;
  return null;
end
$fn$`,
  `create trigger transaction_counts_insert after insert on transactions referencing new table as new_rows
     for each statement execute function transaction_counts_note()`,
  `create trigger transaction_counts_update after update on transactions referencing old table as old_rows new table as new_rows
     for each statement execute function transaction_counts_note()`,
  `create trigger transaction_counts_delete after delete on transactions referencing old table as old_rows
     for each statement execute function transaction_counts_note()`,
  `create constraint trigger transaction_counts_apply after insert on transaction_count_changes
     deferrable initially deferred for each row execute function transaction_counts_apply()`,
  `insert into transaction_counts (project_id, type, status, day, n)
     select project_id, type, status, substr(created_at, 1, 10), count(*) from transactions group by 1, 2, 3, 4`,
];

/**
 * Moves the x402 rail's idempotency rows out of `kv` (written as `x402_idempotency:{project}:{key}` by
 * releases before 0018): a kept reply answers repeats of its key as before, until the same expiry
 * (none written means 24 hours from now); a running claim keeps its lease, so a request still running
 * at the upgrade holds its key until then.
 */
async function moveKvIdempotencyKeys(db: Kysely<any>, nowMs = Date.now()): Promise<number> {
  const prefix = "x402_idempotency:";
  const rows: { key: string; value: string }[] = await db.selectFrom("kv").select(["key", "value"]).where("key", "like", `${prefix}%`).execute();
  for (const row of rows) {
    const rest = row.key.slice(prefix.length);
    const colon = rest.indexOf(":");
    let stored: { state?: string; until?: string; token?: string; body?: unknown; expires?: string };
    try {
      stored = JSON.parse(row.value);
    } catch {
      continue;
    }
    if (colon > 0) {
      const id = { project_id: rest.slice(0, colon), key: rest.slice(colon + 1) };
      const moved =
        stored.state === "passthrough" ? { state: "reply", token: null, until: stored.expires ?? new Date(nowMs + 24 * 3_600_000).toISOString(), reply_json: JSON.stringify(stored.body) }
        : stored.state === "running" && stored.until && stored.token ? { state: "running", token: stored.token, until: stored.until, reply_json: null }
        : undefined;
      if (moved) await db.insertInto("idempotency_keys").values({ ...id, ...moved }).onConflict((oc: any) => oc.columns(["project_id", "key"]).doNothing()).execute();
    }
    await db.deleteFrom("kv").where("key", "=", row.key).execute();
  }
  return rows.length;
}

/** Rows of payments read at once by the 0022 backfill. */
const COUNTED_BACKFILL_PAGE = 1_000;

/**
 * Migration 0022: each payment that can still give its amount back (open, or a completed bank payment an
 * ACH return can reverse) lists every window counter it is in, as holds now write it.
 */
async function listCountedWindows(db: Kysely<any>): Promise<void> {
  let after = "";
  for (;;) {
    const rows: { id: string; project_id: string; token_id: string | null; created_at: string }[] = await db
      .selectFrom("payments")
      .select(["id", "project_id", "token_id", "created_at"])
      .where("id", ">", after)
      .where((eb: any) => eb.or([eb("status", "in", ["pending", "processing"]), eb.and([eb("status", "=", "completed"), eb("rail", "=", "fiat")])]))
      .orderBy("id")
      .limit(COUNTED_BACKFILL_PAGE)
      .execute();
    for (const r of rows) {
      const windows = JSON.stringify(countedWindows(r.token_id === null ? [] : [r.token_id], r.project_id, new Date(r.created_at)));
      await db.updateTable("payments").set({ spend_windows: windows }).where("id", "=", r.id).execute();
    }
    if (rows.length < COUNTED_BACKFILL_PAGE) return;
    after = rows[rows.length - 1]!.id;
  }
}

/** Payments whose final status leaves no account number but the last four digits (migration 0023). */
function forgetBankAccountTrigger(dialect: Dialect): string[] {
  const masked = dialect === "postgres"
    ? `(jsonb_set(new.recipient_json::jsonb - 'account_sealed', '{account_number}', to_jsonb('****' || right(new.recipient_json::jsonb->>'account_number', 4))))::text`
    : `json_set(json_remove(new.recipient_json, '$.account_sealed'), '$.account_number', '****' || substr(json_extract(new.recipient_json, '$.account_number'), -4))`;
  const final = `new.rail = 'fiat' and new.status in ('completed', 'failed', 'reversed') and new.recipient_json is not null`;
  if (dialect === "postgres") {
    return [
      `create or replace function payments_forget_bank_account() returns trigger language plpgsql as $$
begin
  if ${final} then new.recipient_json := ${masked}; end if;
  return new;
end $$`,
      `create trigger payments_forget_bank_account before update of status on payments for each row execute function payments_forget_bank_account()`,
    ];
  }
  return [`create trigger payments_forget_bank_account after update of status on payments for each row when ${final} begin update payments set recipient_json = ${masked} where id = new.id; end`];
}

/** Masks the account numbers that rows written before migration 0023 keep after their payout or final status. */
function maskBankAccountsSql(dialect: Dialect): string {
  const number = dialect === "postgres" ? `(recipient_json::jsonb->>'account_number')` : `json_extract(recipient_json, '$.account_number')`;
  const masked = dialect === "postgres"
    ? `(jsonb_set(recipient_json::jsonb - 'account_sealed', '{account_number}', to_jsonb('****' || right(${number}, 4))))::text`
    : `json_set(json_remove(recipient_json, '$.account_sealed'), '$.account_number', '****' || substr(${number}, -4))`;
  return `update payments set recipient_json = ${masked}
    where rail = 'fiat' and recipient_json is not null and substr(${number}, 1, 4) <> '****'
      and (status in ('completed', 'failed', 'reversed') or provider_ref is not null)`;
}

/** The sandbox off-ramp's payouts kept the whole account number to choose a test outcome: the outcome is kept instead. */
async function maskSandboxPayouts(db: Kysely<any>): Promise<void> {
  const outcomes: Record<string, string> = { "1111000000": "fail", "2222000000": "return", "3333000000": "refuse" };
  let after = "";
  for (;;) {
    const rows: { key: string; value: string }[] = await db.selectFrom("kv").select(["key", "value"]).where("key", "like", "sandbox_payout:%").where("key", ">", after).orderBy("key").limit(500).execute();
    for (const row of rows) {
      const p = JSON.parse(row.value) as { accountNumber?: string; outcome?: string };
      if (typeof p.accountNumber !== "string" || p.accountNumber.startsWith("****")) continue;
      const value = JSON.stringify({ ...p, outcome: p.outcome ?? outcomes[p.accountNumber] ?? "complete", accountNumber: `****${p.accountNumber.slice(-4)}` });
      await db.updateTable("kv").set({ value }).where("key", "=", row.key).execute();
    }
    if (rows.length < 500) return;
    after = rows.at(-1)!.key;
  }
}

/** Numbers rows without a position by creation time, then insertion sequence, per project. */
export async function backfillTransactionPositions(db: Kysely<any>): Promise<void> {
  await sql`
    update transactions set pos = r.rn
    from (select seq, row_number() over (partition by project_id order by created_at, seq) as rn from transactions) as r
    where transactions.seq = r.seq and transactions.pos is null`.execute(db);
}

/** The migrator of this database: its bookkeeping tables in the connection's own schema. */
async function migratorOf(db: Kysely<any>, dialect: Dialect): Promise<Migrator> {
  // Kysely looks for its bookkeeping tables across all schemas; pin them to the schema this
  // connection writes to, or two deployments sharing one database would see each other's.
  const schema =
    dialect === "postgres" ? (await sql<{ s: string }>`select current_schema() as s`.execute(db)).rows[0]?.s : undefined;
  return new Migrator({
    db: dialect === "postgres" ? withOwnSchemaIntrospection(db) : db,
    provider: { getMigrations: async () => migrations(dialect) },
    // Migrations are numbered by the change that wrote them and may land out of order (0013 after 0014);
    // each one only adds, so a database that ran a later one still takes an earlier newcomer.
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
  });
}

/**
 * PostgreSQL: `db` whose introspection (what the migrator asks to learn whether its tables exist) reads the
 * connection's own schema only. Kysely's own reads the columns of every schema, looking each up by name, and
 * failed whenever another schema's table changed or was dropped meanwhile ("column … does not exist",
 * invalid_schema_name): another deployment on the same server, or another test file, made our migration fail.
 */
function withOwnSchemaIntrospection(db: Kysely<any>): Kysely<any> {
  const introspection = {
    async getSchemas() {
      return (await sql<{ name: string }>`select nspname as name from pg_catalog.pg_namespace where nspname = current_schema()`.execute(db)).rows;
    },
    async getTables() {
      const rows = await sql<{ name: string; schema: string; kind: string }>`
        select c.relname as name, n.nspname as schema, c.relkind as kind from pg_catalog.pg_class c
        join pg_catalog.pg_namespace n on n.oid = c.relnamespace
        where n.nspname = current_schema() and c.relkind in ('r', 'v', 'p')`.execute(db);
      return rows.rows.map((r) => ({ name: r.name, schema: r.schema, isView: r.kind === "v", columns: [] }));
    },
    async getMetadata() {
      return { tables: await this.getTables() };
    },
  };
  return new Proxy(db, {
    get(target, prop) {
      if (prop === "introspection") return introspection;
      // Kysely's methods read private fields: call them on the instance itself.
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The names of the migrations this database has not run yet (every one on a database without the ledger), without running any. */
export async function pendingMigrations(db: Kysely<any>, dialect: Dialect): Promise<string[]> {
  const all = await (await migratorOf(db, dialect)).getMigrations();
  return all.filter((m) => m.executedAt === undefined).map((m) => m.name);
}

/** Migrates to `target` (a migration name) or, without one, to the latest. */
export async function migrateToLatest(db: Kysely<any>, dialect: Dialect, target?: string): Promise<string[]> {
  const migrator = await migratorOf(db, dialect);
  const { error, results } = target ? await migrator.migrateTo(target) : await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
