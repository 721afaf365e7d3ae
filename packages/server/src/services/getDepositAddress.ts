/**
 * GET /v1/stablecoin/address: the project's deposit wallet, derived from its BIP-44 index on the
 * first call and stored, so it is stable forever after (and shows in the balance's wallet_address).
 */
import type { DepositAddress } from "@agentwallet/api";
import type { RailDeps } from "../rails/railDeps.ts";

export async function getDepositAddress(ctx: Pick<RailDeps, "ledger" | "custody">, projectId: string): Promise<DepositAddress> {
  const project = await ctx.ledger.projects.get(projectId);
  if (!project) throw new Error(`project ${projectId} missing`);
  const address = project.wallet_address ?? (await ctx.ledger.projects.setWalletAddress(projectId, ctx.custody.addressOf(project.wallet_index)));
  return { project_id: projectId, chain: "base", address, currency: "usdc" };
}
