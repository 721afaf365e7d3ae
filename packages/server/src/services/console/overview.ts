/**
 * A project's overview page: its balance as `GET /v1/balance` shows it (services/getBalance.ts, the frozen
 * wallet's rule included) plus what is held for open payments, its spend per day and rail, and, in the
 * sandbox, test USDC minted to its deposit wallet.
 */
import type { DailySpend, Overview } from "@agentwallet/console";
import { balanceOf } from "../getBalance.ts";
import { getDepositAddress } from "../getDepositAddress.ts";
import type { ServiceDeps } from "../serviceDeps.ts";
import type { ConsoleDeps } from "./viewers.ts";

export async function overview(deps: Pick<ConsoleDeps, "ledger">, projectId: string): Promise<Overview> {
  const b = await deps.ledger.balances.get(projectId);
  const project = await deps.ledger.projects.get(projectId);
  const balance = balanceOf(projectId, {
    availableMicros: Number(b?.available_micros ?? 0),
    pendingMicros: Number(b?.pending_micros ?? 0),
    totalFundedMicros: Number(b?.total_funded_micros ?? 0),
    totalSpentMicros: Number(b?.total_spent_micros ?? 0),
    walletAddress: project?.wallet_address ?? null,
    walletFrozenAt: project?.wallet_frozen_at ?? null,
  });
  return { ...balance, held: Number(b?.held_micros ?? 0) };
}

/** Spend of each of the last `days` UTC days by rail, in micro-USDC (a bank payment's cents at 10,000 micro-USDC each). */
export async function spendByDay(deps: ConsoleDeps, projectId: string, days: number): Promise<DailySpend[]> {
  const since = new Date(deps.clock().getTime() - days * 86_400_000).toISOString().slice(0, 10);
  const rows = await deps.ledger.balances.spendByDay(projectId, since);
  return rows.map((r) => ({
    day: r.day,
    rail: (r.type === "x402_payment" ? "x402" : r.type === "payment" ? "fiat" : "usdc_transfer") as DailySpend["rail"],
    amount_micros: r.currency === "usd" ? r.amount * 10_000 : r.amount,
  }));
}

/** Sandbox: mints whole test USDC to the project's deposit wallet (derived first if it is not yet); the watcher credits it as any deposit. */
export async function fundSandbox(
  deps: Pick<ServiceDeps, "ledger" | "custody">,
  mint: (projectId: string, amountMicros: bigint) => Promise<void>,
  projectId: string,
  amountUsdc: number,
): Promise<void> {
  await getDepositAddress(deps, projectId);
  await mint(projectId, BigInt(amountUsdc) * 1_000_000n);
}
