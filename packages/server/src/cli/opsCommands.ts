/** Operator commands over the chain: move open payments forward once, and reconcile wallets with the ledger. */
import type { Address } from "viem";
import { connectChain } from "../chain/connectSandbox.ts";
import { buildContext, createLogger } from "../deps.ts";
import { buildRails } from "../rails/buildRails.ts";
import { createSandboxFiatProvider } from "../rails/fiat/sandboxProvider.ts";
import { reconcile } from "../services/reconcile.ts";
import { createPaymentWorker } from "../workers/paymentWorker.ts";
import type { Command } from "./commands.ts";

export const workersRunOnce: Command = async ({ config, io }) => {
  const built = await buildContext(config, createLogger("warn"));
  try {
    const chain = await connectChain(config);
    const fiatProvider = chain.sandbox
      ? createSandboxFiatProvider({ ledger: built.ctx.ledger, chain: chain.client, privateKey: chain.sandbox.offrampKey, webhookSecret: "unused", delayMs: config.fiat.sandboxDelayMs, logger: built.ctx.logger })
      : undefined;
    const { rails } = await buildRails(built.ctx, chain, { fiatProvider });
    built.ctx.rails = rails;
    const worker = createPaymentWorker(built.ctx, rails, { leaseMs: 30_000 });
    const touched = await worker.runOnce();
    const open = await built.ctx.ledger.db.selectFrom("payments").select("status").where("status", "in", ["pending", "processing"]).execute();
    io.out(`Advanced ${touched} open payment(s); ${open.length} still open.`, { advanced: touched, still_open: open.length });
    return 0;
  } finally {
    await built.close();
  }
};

export const reconcileCommand: Command = async ({ config, io }) => {
  const built = await buildContext(config, createLogger("warn"));
  try {
    const chain = await connectChain(config);
    const report = await reconcile(built.ctx.ledger, (a: Address) => chain.client.usdcBalance(a));
    io.out(
      report.rows.map((r) => `${r.project_id}  on-chain ${r.onchain_micros}  available ${r.available_micros}  held ${r.held_micros}  drift ${r.drift_micros}${r.open_payments ? ` (${r.open_payments} open)` : ""}`).join("\n") +
        `\n${report.ok ? "Reconciled: every settled wallet matches the ledger." : "Drift found on settled wallets."}`,
      report,
    );
    return report.ok ? 0 : 1;
  } finally {
    await built.close();
  }
};
