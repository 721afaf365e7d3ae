/** Prometheus metrics on a registry of our own (tests build many apps in one process). */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { HealthSignals } from "../services/healthSignals.ts";

export type Metrics = ReturnType<typeof createMetrics>;

/** `health`: the health signals once they exist (the server has them when its chain and watcher do). */
export function createMetrics(opts: { defaultMetrics?: boolean; frozenWallets?: () => Promise<number>; health?: () => HealthSignals | undefined } = {}) {
  const frozenWallets = opts.frozenWallets;
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  if (opts.health) healthGauges(registry, opts.health);
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

/**
 * The gauges an operator alerts on (deploy/prometheus/alerts.yml), each read at scrape time from the
 * ledger or the chain (services/healthSignals.ts). A figure that cannot be read (the node does not answer,
 * no reconcile has run) is NaN in that scrape, never a 0 that would look like an empty relayer.
 */
function healthGauges(registry: Registry, signals: () => HealthSignals | undefined): void {
  const gauge = (name: string, help: string, collect: (g: Gauge, h: HealthSignals) => Promise<void>, labelNames: string[] = []) =>
    new Gauge({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        this.reset();
        if (labelNames.length === 0) this.set(Number.NaN);
        const h = signals();
        if (h) await collect(this, h);
      },
    });
  gauge("agentwallet_relayer_balance_eth", "The relayer's ETH, which pays the gas of every USDC and bank payment", async (g, h) => {
    const r = await h.relayer();
    if (r) g.set(Number(r.balanceWei) / 1e18);
  });
  gauge("agentwallet_relayer_runway_seconds", "How long the relayer's ETH lasts at the last day's payment rate (+Inf with no payments)", async (g, h) => {
    const r = await h.relayer();
    if (r) g.set(r.runwaySeconds);
  });
  gauge("agentwallet_relayer_unfunded", "1 while the node refuses the relayer's transactions for want of ETH for gas (relayed payments wait), else 0", async (g, h) => {
    g.set((await h.relayerCondition()) ? 1 : 0);
  });
  gauge("agentwallet_oldest_open_payment_age_seconds", "Age of the oldest payment not yet final (pending or processing), per rail; 0 with none", async (g, h) => {
    for (const [rail, age] of Object.entries(await h.openPaymentAges())) g.labels(rail).set(age);
  }, ["rail"]);
  gauge("agentwallet_webhook_undelivered", "Webhook deliveries to clients neither delivered nor given up", async (g, h) => g.set((await h.webhookBacklog()).undelivered));
  gauge("agentwallet_webhook_oldest_undelivered_age_seconds", "Age of the oldest event with a delivery not yet made; 0 with none", async (g, h) => g.set((await h.webhookBacklog()).oldestAgeSeconds));
  gauge("agentwallet_deposit_watcher_lag_blocks", "Blocks the deposit watcher is behind the head, beyond its confirmation depth", async (g, h) => {
    const lag = await h.depositLagBlocks();
    if (lag !== undefined) g.set(lag);
  });
  gauge("agentwallet_reconcile_drift_micros", "Sum of every wallet's drift from the ledger at the last `agentwallet reconcile`, micro-USDC", async (g, h) => {
    const r = await h.reconcile();
    if (r) g.set(r.drift_micros);
  });
  gauge("agentwallet_reconcile_ok", "1 when the last `agentwallet reconcile` found nothing wrong, else 0", async (g, h) => {
    const r = await h.reconcile();
    if (r) g.set(r.ok ? 1 : 0);
  });
  gauge("agentwallet_reconcile_last_run_timestamp_seconds", "When the last `agentwallet reconcile` ran (Unix seconds)", async (g, h) => {
    const r = await h.reconcile();
    if (r) g.set(Date.parse(r.at) / 1_000);
  });
  gauge("agentwallet_deployment_created_timestamp_seconds", "When the deployment's first server started on its database (Unix seconds): a reconcile that never ran is stale counted from it", async (g, h) => {
    const at = await h.deploymentCreatedAt();
    if (at) g.set(Date.parse(at) / 1_000);
  });
}
