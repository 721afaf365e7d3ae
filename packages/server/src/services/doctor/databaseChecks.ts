/**
 * `doctor`'s checks of the database: reachable, migrated, recording this configuration's mode and chain,
 * and its ledger verified (what `agentwallet verify-ledger` checks).
 */
import { type Config, describeDatabase } from "../../config.ts";
import type { DatabaseInspection } from "../../ledger/inspect.ts";
import { modeOfConfig } from "../deployment.ts";
import { type Check, fail, ok } from "./check.ts";

const INIT = "run `agentwallet init` with this deployment's settings (it creates and migrates the database and records its mode)";

export function databaseChecks(config: Config, db: DatabaseInspection): Check[] {
  const where = describeDatabase(config);
  if (db.state === "unreachable") return [fail("database", `${where} does not answer: ${db.error}`, "check DATABASE_URL (host, port, user, password) and that PostgreSQL runs and accepts this user")];
  if (db.state === "missing") return [fail("database", `${where} holds no Agent Wallet ledger`, INIT)];
  const reached = ok("database", `${where} answers`);
  if (db.state === "behind") {
    return [reached, fail("migrations", `${db.pending.length} migration(s) not applied: ${db.pending.slice(0, 3).join(", ")}${db.pending.length > 3 ? ", …" : ""}`, "run `agentwallet migrate` (or `agentwallet init`) with this version before starting the server")];
  }
  return [reached, ok("migrations", "every migration applied"), deploymentCheck(config, db), ledgerCheck(db)];
}

function deploymentCheck(config: Config, db: Extract<DatabaseInspection, { state: "current" }>): Check {
  const mode = modeOfConfig(config);
  const r = db.deployment;
  if (!r) return fail("mode", "the database records no deployment mode yet", INIT);
  if (r.mode !== mode) {
    return fail("mode", `the database holds a ${r.mode} deployment (recorded ${r.created_at}) and this configuration is ${mode}`, r.mode === "test" ? "point DATABASE_URL (or --data-dir) at the live deployment's own database; a sandbox's database never becomes a live one" : "unset BASE_RPC_URL's live settings, or point DATABASE_URL at a test database");
  }
  if (r.chain_id !== config.chain.chainId) return fail("mode", `the database's deployment is on chain ${r.chain_id}, this configuration on chain ${config.chain.chainId}`, "point DATABASE_URL at this chain's database");
  return ok("mode", `${r.mode} deployment on chain ${r.chain_id}, as configured`);
}

function ledgerCheck(db: Extract<DatabaseInspection, { state: "current" }>): Check {
  const v = db.verify;
  if (v.ok) return ok("ledger", `${v.projects} project balance(s) match ${v.entries} journal entries`);
  const first = v.problems[0]!;
  return fail("ledger", `${v.problems.length} problem(s); first: ${first.check}: ${first.detail}`, "run `agentwallet verify-ledger` for the whole list and stop the server until it is understood (docs/deploy.md, \"Alerts\")");
}
