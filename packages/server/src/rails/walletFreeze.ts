/**
 * A project's wallet frozen by USDC's blacklister, or released: what the chain says is stored on the
 * project (`wallet_frozen_at`), with its `wallet.frozen` / `wallet.unfrozen` webhook event in the same
 * write (Projects.setWalletFrozen), and said once in the log per change. Whoever learns it calls this:
 * the diagnosis of a reverted transfer (revertFailure.ts) and the deposit watcher, which follows USDC's
 * `Blacklisted` / `UnBlacklisted` events for the project wallets (decisions.md, "Frozen wallets").
 */
import type { Logger } from "pino";
import type { Clock } from "../ids.ts";
import type { ProjectStore } from "../ledger/ports.ts";

export type FreezeDeps = { ledger: { projects: Pick<ProjectStore, "setWalletFrozen"> }; clock: Clock; logger: Logger };

/** Stores that `project`'s wallet is (or is no longer) frozen; answers whether this call changed it. */
export async function recordWalletFreeze(d: FreezeDeps, project: { id: string; wallet_address: string }, frozen: boolean, seenBy: string): Promise<boolean> {
  const at = d.clock().toISOString();
  const changed = await d.ledger.projects.setWalletFrozen(project.id, frozen ? at : null, {
    at,
    payload: (frozenAt) =>
      JSON.stringify({
        type: frozen ? "wallet.frozen" : "wallet.unfrozen",
        timestamp: at,
        data: { project_id: project.id, wallet_address: project.wallet_address, frozen, frozen_since: frozenAt },
      }),
  });
  if (changed) {
    if (frozen) d.logger.error({ project_id: project.id, wallet_address: project.wallet_address, seen_by: seenBy }, "project wallet frozen by USDC's blacklister; its payments are refused until the freeze is lifted");
    else d.logger.warn({ project_id: project.id, wallet_address: project.wallet_address, seen_by: seenBy }, "project wallet no longer frozen by USDC's blacklister; payments accepted again");
  }
  return changed;
}
