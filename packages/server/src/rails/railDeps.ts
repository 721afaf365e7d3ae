/**
 * What the rails use of the process they run in, declared here by their users (deps.ts builds it, the
 * same way for the request process, the settlement thread and the CLI). The layers above add to it.
 */
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { Custody } from "../chain/custody.ts";
import type { Ledger } from "../ledger/store.ts";
import type { Clock, IdGenerator } from "../ids.ts";

export type RailDeps = {
  config: Config;
  ledger: Ledger;
  custody: Custody;
  clock: Clock;
  newId: IdGenerator;
  logger: Logger;
  /** Identifies this process in payment leases. */
  instanceId: string;
};
