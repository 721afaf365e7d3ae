/**
 * Operator commands over the chain: move open payments forward once (after filling relayer nonces the
 * chain lost), and reconcile wallets with the ledger.
 */
import type { Address, Hex } from "viem";
import { connectChain } from "../chain/connectSandbox.ts";
import { connectRails, createLogger, openDeps } from "../deps.ts";
import { findLostLegs, resendLostLegs, resendLostX402Settlements } from "../settlement/lostLegs.ts";
import { formatReconcile, reconcile, recordReconcile } from "../services/reconcile.ts";
import { createPaymentWorker } from "../settlement/paymentWorker.ts";
import type { Command } from "./command.ts";

export const workersRunOnce: Command = async ({ config, io }) => {
  const deps = await openDeps(config, createLogger("warn"), { serveRequests: false });
  const { base } = deps;
  try {
    const chain = await connectChain(config);
    const { rails } = await connectRails(base, chain, { offrampKey: chain.sandbox?.offrampKey, webhookSecret: "unused" });
    // Nonces the chain lost first: every later relayer transaction waits behind them.
    const gaps = await rails.relayer.closeGaps();
    const resent = await resendLostLegs({ ctx: base, chain, relayer: rails.relayer });
    const x402Resent = await resendLostX402Settlements({ ctx: base, chain, relayer: rails.relayer });
    const worker = createPaymentWorker(base, rails, { leaseMs: 30_000 });
    const touched = await worker.runOnce();
    const open = await base.ledger.payments.openPaymentCount();
    const repaired = gaps.resent.length + gaps.replaced.length
      ? ` Relayer nonces the chain lost: ${gaps.resent.length} sent again, ${gaps.replaced.length} filled with a no-op; ${resent} completed payment(s) signed again.`
      : "";
    const settlements = x402Resent ? ` ${x402Resent} x402 settlement(s) the chain lost paid again.` : "";
    io.out(`Advanced ${touched} open payment(s); ${open} still open.${repaired}${settlements}`, {
      advanced: touched,
      still_open: open,
      relayer_gaps: { resent: gaps.resent, replaced: gaps.replaced, completed_resent: resent },
      x402_settlements_resent: x402Resent,
    });
    return 0;
  } finally {
    await deps.close();
  }
};

export const reconcileCommand: Command = async ({ config, io }) => {
  const deps = await openDeps(config, createLogger("warn"), { serveRequests: false });
  const { ledger } = deps.base;
  try {
    const chain = await connectChain(config);
    const report = await reconcile(
      ledger,
      (a: Address) => chain.client.usdcBalance(a),
      () => findLostLegs(ledger.payments, chain.client, config.chain.paymentConfirmations),
      async (hash) => (await chain.client.receipt(hash as Hex))?.status === "success",
    );
    // The drift metric reads the last run's outcome (agentwallet_reconcile_*).
    await recordReconcile(ledger.kv, report, new Date());
    io.out(formatReconcile(report), report);
    return report.ok ? 0 : 1;
  } finally {
    await deps.close();
  }
};
