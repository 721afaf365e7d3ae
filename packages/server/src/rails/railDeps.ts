/**
 * What the rails use of the process they run in, declared here by their users (deps.ts builds it, the
 * same way for the request process, the settlement thread and the CLI). The layers above add to it.
 */
import type { Logger } from "pino";
import type { Config } from "../config.ts";
import type { Custody } from "../chain/custody.ts";
import type { KvStore, NonceStore, PaymentStore, ProjectStore, ReturnWatchStore } from "../ledger/ports.ts";
import type { Clock, IdGenerator } from "../ids.ts";

/**
 * What the rails do to the ledger: move their payments (hold to resolution, leases, reversal), keep their
 * small state in kv rows, read a project's wallet, find the relayer's transaction behind a payment, and watch
 * completed bank payments for returns.
 */
export type RailLedger = { payments: PaymentStore; kv: KvStore; projects: ProjectStore; relayerNonces: NonceStore; returnWatch: ReturnWatchStore };

export type RailDeps = {
  config: Config;
  ledger: RailLedger;
  custody: Custody;
  clock: Clock;
  newId: IdGenerator;
  logger: Logger;
  /** Identifies this process in payment leases. */
  instanceId: string;
  /** The key bank account numbers awaiting their payout are sealed with (masterKeys.ts `loadBankAccountKey`). */
  bankAccountKey: Uint8Array;
};
