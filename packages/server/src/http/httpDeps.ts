/**
 * What the HTTP layer uses beyond the services' dependencies (services/serviceDeps.ts), declared here
 * by its users: the rate limiter, and the hooks its webhook and readiness routes call into the parts
 * the process runs beside it (the deposit watcher, the fiat rail, settlement). deps.ts builds it.
 */
import type { ServiceDeps } from "../services/serviceDeps.ts";
import type { RateLimiter } from "./rateLimit.ts";

export type HttpHooks = {
  depositHint?: (txHash: string) => Promise<void>;
  fiatHint?: (providerRef: string) => Promise<void>;
  /** Whether settlement follows payments yet (its thread may still be starting); reported by /readyz. */
  settlementRunning?: () => boolean;
};

export type HttpDeps = ServiceDeps & {
  rateLimiter: RateLimiter;
  hooks: HttpHooks;
};
