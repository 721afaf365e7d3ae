/**
 * What an operator alerts on, read when Prometheus scrapes (http/metrics.ts): the relayer's ETH and its
 * runway and whether the node refuses its transactions for gas, the oldest open payment per rail, the webhook backlog, the deposit watcher's lag in blocks, the
 * last reconcile and when the deployment first started (what a reconcile that never ran is counted from). Chain reads, and the count of the last day's relayed payments (a range over every payment),
 * are kept for `CHAIN_READ_MS`, so a scrape every few seconds costs the node and the database little; a read that
 * fails leaves its figures out of that scrape (an alert on their absence fires).
 */
import type { Address } from "viem";
import type { ChainClient } from "../chain/chainClient.ts";
import { type RelayerCondition, relayerCondition } from "../chain/relayer.ts";
import type { DeploymentStore, HealthStore, KvStore } from "../ledger/ports.ts";
import { relayerRunway } from "./relayerRunway.ts";
import { type ReconcileSummary, lastReconcile } from "./reconcile.ts";

/** How long one read of the chain (the relayer's balance, the gas price, the head) answers scrapes. */
export const CHAIN_READ_MS = 30_000;

export type HealthSignals = {
  relayer(): Promise<{ balanceWei: bigint; runwaySeconds: number } | undefined>;
  /** Seconds since the oldest open payment of each rail was created (0 for a rail with none). */
  openPaymentAges(): Promise<Record<string, number>>;
  webhookBacklog(): Promise<{ undelivered: number; oldestAgeSeconds: number }>;
  depositLagBlocks(): Promise<number | undefined>;
  reconcile(): Promise<ReconcileSummary | undefined>;
  /** When the deployment's first server started on its database (its record), or undefined before one did. */
  deploymentCreatedAt(): Promise<string | undefined>;
  /** What keeps the relayer from sending now (chain/relayer.ts), or undefined while it sends. */
  relayerCondition(): Promise<RelayerCondition | undefined>;
};

export const PAYMENT_RAILS = ["usdc_transfer", "fiat", "x402"] as const;

export function createHealthSignals(d: {
  ledger: { health: HealthStore; kv: KvStore; deployment: DeploymentStore };
  chain: ChainClient;
  relayerAddress: Address;
  depositCursorKey: string;
  depositConfirmations: number;
  now: () => Date;
}): HealthSignals {
  const cached = <T>(read: () => Promise<T>) => {
    let last: { at: number; value: Promise<T> } | undefined;
    return () => {
      const at = d.now().getTime();
      if (!last || at - last.at > CHAIN_READ_MS) {
        const value = read();
        last = { at, value };
        value.catch(() => (last = undefined));
      }
      return last.value;
    };
  };
  const relayerReads = cached(() =>
    Promise.all([d.chain.client.getBalance({ address: d.relayerAddress }), d.chain.client.getGasPrice(), d.ledger.health.relayerPaymentsSince(new Date(d.now().getTime() - 86_400_000))]),
  );
  const head = cached(() => d.chain.blockNumber());
  const ageSeconds = (iso: string) => Math.max(0, (d.now().getTime() - Date.parse(iso)) / 1_000);
  return {
    async relayer() {
      try {
        const [balanceWei, gasPriceWei, paymentsLastDay] = await relayerReads();
        const r = relayerRunway({ balanceWei, gasPriceWei, paymentsLastDay });
        return { balanceWei, runwaySeconds: r.runwaySeconds ?? Number.POSITIVE_INFINITY };
      } catch {
        return undefined;
      }
    },
    async openPaymentAges() {
      const ages: Record<string, number> = Object.fromEntries(PAYMENT_RAILS.map((r) => [r, 0]));
      for (const p of await d.ledger.health.oldestOpenPayments()) ages[p.rail] = ageSeconds(p.created_at);
      return ages;
    },
    async webhookBacklog() {
      const b = await d.ledger.health.webhookBacklog();
      return { undelivered: b.undelivered, oldestAgeSeconds: b.oldest_occurred_at ? ageSeconds(b.oldest_occurred_at) : 0 };
    },
    async depositLagBlocks() {
      try {
        const [n, cursor] = await Promise.all([head(), d.ledger.kv.get(d.depositCursorKey)]);
        // The watcher stays `confirmations` blocks behind the head on purpose; lag is what lies beyond.
        return cursor === undefined ? undefined : Math.max(0, n - d.depositConfirmations - Number(cursor));
      } catch {
        return undefined;
      }
    },
    reconcile: () => lastReconcile(d.ledger.kv),
    deploymentCreatedAt: async () => (await d.ledger.deployment.get())?.created_at,
    relayerCondition: () => relayerCondition(d.ledger.kv),
  };
}
