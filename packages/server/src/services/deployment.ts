/**
 * The deployment's mode comes from its database, not from the shell that runs a process: the first server
 * (or `agentwallet migrate`) to run on a database records its mode, live or test, and its chain; every
 * later start compares its configuration with that record and refuses the other mode's database, so a
 * live server never runs on a sandbox's database and the reverse. The CLI's project and token commands
 * read the mode from the record (decisions.md, "The deployment's mode").
 */
import type { Config } from "../config.ts";
import type { Clock } from "../ids.ts";
import type { DeploymentMode, DeploymentRecord } from "../ledger/deployment.ts";
import type { DeploymentStore } from "../ledger/ports.ts";

export type { DeploymentMode, DeploymentRecord };

/** A start refused because the database belongs to a deployment of the other mode or chain. */
export class DeploymentMismatchError extends Error {
  override name = "DeploymentMismatchError";
}

/** The mode a configuration runs in: live with BASE_RPC_URL, test (the sandbox) without. */
export function modeOfConfig(config: Pick<Config, "mode">): DeploymentMode {
  return config.mode === "live" ? "live" : "test";
}

const HOW_TO_RUN: Record<DeploymentMode, string> = {
  live: "live mode (BASE_RPC_URL and the live settings)",
  test: "the sandbox (BASE_RPC_URL unset)",
};

/** The refusal of a configuration of one mode on a database recorded as the other. */
export function mismatch(record: Pick<DeploymentRecord, "mode" | "created_at">, config: Pick<Config, "mode">, database: string): DeploymentMismatchError {
  const mode = modeOfConfig(config);
  return new DeploymentMismatchError(
    `${database} holds a ${record.mode} deployment (recorded ${record.created_at}), and this process runs in ${HOW_TO_RUN[mode]}. ` +
      `Run it in ${HOW_TO_RUN[record.mode]}, or point DATABASE_URL (or --data-dir) at the ${mode} deployment's own database; a new database takes the mode of the first server or \`agentwallet migrate\` run on it.`,
  );
}

/**
 * At every start of a server process (and `migrate`): records this configuration's mode and chain on a
 * database without a record, and refuses one recorded otherwise. A database created before the record
 * existed takes the mode of its first start after the upgrade, unless it holds live tokens and this start
 * is a test one: the sandbox never issued `aw_live_` tokens, so that database is surely a live one.
 */
export async function claimDeployment(deps: { ledger: { deployment: DeploymentStore }; clock: Clock }, config: Pick<Config, "mode" | "chain">, database: string): Promise<DeploymentRecord> {
  const mode = modeOfConfig(config);
  let record = await deps.ledger.deployment.get();
  if (!record) {
    if (mode === "test" && (await deps.ledger.deployment.hasTokensOf("live"))) {
      throw new DeploymentMismatchError(
        `${database} holds live API tokens (aw_live_…) but records no mode yet, and this process runs in ${HOW_TO_RUN.test}. Start it in ${HOW_TO_RUN.live} once to record it as live, or point DATABASE_URL (or --data-dir) at a sandbox database.`,
      );
    }
    record = await deps.ledger.deployment.record({ mode, chain_id: config.chain.chainId, created_at: deps.clock().toISOString() });
  }
  if (record.mode !== mode) throw mismatch(record, config, database);
  if (record.chain_id !== config.chain.chainId) {
    throw new DeploymentMismatchError(`${database} holds a deployment on chain ${record.chain_id}, and this process is configured for chain ${config.chain.chainId}; point DATABASE_URL (or --data-dir) at this chain's database.`);
  }
  return record;
}
