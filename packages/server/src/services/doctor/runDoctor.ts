/**
 * `agentwallet doctor`: the deployment's configuration checked against reality, one check per line: the
 * database, the chain (live mode), the secrets on disk, Redis and Bridge. Reads only; changes nothing.
 */
import { getAddress, isAddress } from "viem";
import type { Config } from "../../config.ts";
import { inspectDatabase } from "../../ledger/inspect.ts";
import { chainChecks } from "./chainChecks.ts";
import { type Check, warn } from "./check.ts";
import { databaseChecks } from "./databaseChecks.ts";
import { bridgeChecks, dataFilesCheck, keyDerivesWallets, keyFileCheck, publicUrlCheck, redisCheck } from "./settingsChecks.ts";

export type DoctorReport = { ok: boolean; checks: Check[] };

export async function runDoctor(config: Config, now: Date): Promise<DoctorReport> {
  // Modes first: opening a SQLite database sets its files' modes, which would hide a wrong one.
  const [keyFile, dataFiles] = [keyFileCheck(config), dataFilesCheck(config)];
  // Wallets are stored checksummed; a malformed treasury is the chain checks' to report.
  const treasury = config.custody.treasuryAddress;
  const db = await inspectDatabase(config, { treasury: treasury && isAddress(treasury, { strict: false }) ? getAddress(treasury) : undefined, now });
  const current = db.state === "current" ? db : undefined;
  const chain =
    config.mode === "live"
      ? await chainChecks(config, { now, paymentsLastDay: current?.relayerPaymentsLastDay, treasuryIsProjectWallet: current?.treasuryIsProjectWallet })
      : [warn("chain", "sandbox mode (BASE_RPC_URL is unset): the chain, relayer and treasury are the local chain's", "set BASE_RPC_URL and the live settings to check a live deployment")];
  const files = [keyDerivesWallets(config, keyFile, current?.recordedWallet), dataFiles];
  const redis = await redisCheck(config);
  const checks = [...databaseChecks(config, db), ...chain, publicUrlCheck(config), ...files, ...(redis ? [redis] : []), ...(await bridgeChecks(config))];
  return { ok: checks.every((c) => c.status !== "fail"), checks };
}
