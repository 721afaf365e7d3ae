/**
 * What every service and route needs, built once by deps.ts. Tests build their own with real
 * databases and chains; nothing here reaches for a global.
 */
import type { Logger } from "pino";
import type { Config } from "./config.ts";
import type { Custody } from "./chain/custody.ts";
import type { Ledger } from "./ledger/store.ts";
import type { Clock, IdGenerator } from "./ids.ts";
import type { RateLimiter } from "./http/rateLimit.ts";
import type { Rails } from "./rails/rails.ts";

export type AppContext = {
  config: Config;
  ledger: Ledger;
  custody: Custody;
  clock: Clock;
  newId: IdGenerator;
  logger: Logger;
  rateLimiter: RateLimiter;
  /** Payment rails; absent until the chain is configured (read-only deployments, some tests). */
  rails: Rails | undefined;
  /** Hooks the HTTP layer calls on webhooks; set by deps.ts. */
  hooks: {
    depositHint?: (txHash: string) => Promise<void>;
    fiatHint?: (providerRef: string) => Promise<void>;
    /** Whether settlement follows payments yet (its thread may still be starting); reported by /readyz. */
    settlementRunning?: () => boolean;
  };
  /** Hands a just-accepted payment (leased to this process) to the dispatcher. */
  dispatch?: (payment: import("./ledger/store.ts").PaymentRow) => void;
  /** Identifies this process in payment leases. */
  instanceId: string;
  /** The key bank accounts in spending controls are hashed with (deps.ts derives it from the master key source). */
  recipientHashKey?: Uint8Array;
  /** The key webhook endpoints' signing secrets are encrypted with (deps.ts `loadWebhookSecretKey`). */
  webhookSecretKey?: Uint8Array;
};
