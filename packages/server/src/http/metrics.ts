/** Prometheus metrics on a registry of our own (tests build many apps in one process). */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(opts: { defaultMetrics?: boolean; frozenWallets?: () => Promise<number> } = {}) {
  const frozenWallets = opts.frozenWallets;
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpDuration: new Histogram({
      name: "agentwallet_http_request_duration_seconds",
      help: "HTTP request duration by route and status",
      labelNames: ["method", "route", "status"] as const,
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers: [registry],
    }),
    payments: new Counter({
      name: "agentwallet_payments_total",
      help: "Payments by rail and outcome",
      labelNames: ["rail", "outcome"] as const,
      registers: [registry],
    }),
    deposits: new Counter({ name: "agentwallet_deposits_credited_total", help: "Deposits credited", registers: [registry] }),
    // Read from the ledger at each scrape, so it is right whichever process or thread saw the freeze.
    frozenWallets: new Gauge({
      name: "agentwallet_frozen_wallets",
      help: "Project wallets frozen by USDC's blacklister now (their payments are refused)",
      registers: [registry],
      async collect() {
        if (frozenWallets) this.set(await frozenWallets());
      },
    }),
  };
}
