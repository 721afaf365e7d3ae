/**
 * The configured database as `agentwallet doctor` finds it: opened as it is, never created or migrated by
 * looking, and answered as plain values.
 */
import { existsSync } from "node:fs";
import type { Config } from "../config.ts";
import { newId, systemClock } from "../ids.ts";
import { openDb } from "./db.ts";
import type { DeploymentRecord } from "./deployment.ts";
import { pendingMigrations } from "./migrations.ts";
import type { RecordedWallet } from "./projects.ts";
import { Ledger } from "./store.ts";
import type { LedgerProblem } from "./verify.ts";

/** What `doctor` learns of the configured database, opened as it is. */
export type DatabaseInspection =
  | { state: "missing" }
  | { state: "unreachable"; error: string }
  | { state: "behind"; pending: string[] }
  | {
      state: "current";
      deployment: DeploymentRecord | undefined;
      verify: { ok: boolean; problems: LedgerProblem[]; projects: number; entries: number };
      /** Whether the treasury address asked about is a project's wallet. */
      treasuryIsProjectWallet: boolean;
      /** Payments the relayer sent in the last day (USDC transfers and bank payments: the rails it pays gas for). */
      relayerPaymentsLastDay: number;
      /** A project's recorded deposit address and its wallet index, which the master key must derive. */
      recordedWallet: RecordedWallet | undefined;
    };


/**
 * The configured database as it is: missing (no SQLite file, no ledger tables in PostgreSQL), unreachable,
 * behind (migrations not run yet) or current (with its deployment record and the ledger's verification).
 */
export async function inspectDatabase(config: Config, ask: { treasury: string | undefined; now: Date }): Promise<DatabaseInspection> {
  // A SQLite file is never created by looking (openDb would create it).
  if (!config.databaseUrl && !existsSync(config.sqlitePath)) return { state: "missing" };
  let opened;
  try {
    opened = config.databaseUrl
      ? openDb({ kind: "postgres", url: config.databaseUrl, poolMax: 1 })
      : openDb({ kind: "sqlite", path: config.sqlitePath, synchronous: config.sqliteSynchronous });
  } catch (err) {
    return { state: "unreachable", error: (err as Error).message };
  }
  try {
    let pending: string[];
    try {
      pending = await pendingMigrations(opened.db, opened.dialect);
    } catch (err) {
      return { state: "unreachable", error: (err as Error).message };
    }
    // The first migration creates the ledger's tables: pending, there is no ledger at all.
    if (pending.includes("0001_ledger")) return { state: "missing" };
    if (pending.length > 0) return { state: "behind", pending };
    const ledger = new Ledger(opened.db, opened.dialect, systemClock, newId);
    return {
      state: "current",
      deployment: await ledger.deployment.get(),
      verify: await ledger.verify(),
      treasuryIsProjectWallet: ask.treasury ? await ledger.projects.isWallet(ask.treasury) : false,
      relayerPaymentsLastDay: await ledger.health.relayerPaymentsSince(new Date(ask.now.getTime() - 86_400_000)),
      recordedWallet: await ledger.projects.firstRecordedWallet(),
    };
  } finally {
    await opened.close();
  }
}
