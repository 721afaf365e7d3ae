/**
 * Compares each project wallet's USDC on-chain with the ledger. For a wallet with no open payment,
 * on-chain = available − fees of reversed fiat payments (credited back in the ledger while the
 * treasury still holds them on-chain). Open payments make the figures move; they are reported, not
 * judged.
 */
import type { Address } from "viem";
import type { Ledger } from "../ledger/store.ts";

export type ReconcileRow = { project_id: string; wallet: string; onchain_micros: number; available_micros: number; held_micros: number; fees_owed_micros: number; open_payments: number; drift_micros: number };

export async function reconcile(ledger: Ledger, balanceOf: (a: Address) => Promise<bigint>): Promise<{ ok: boolean; rows: ReconcileRow[] }> {
  const rows: ReconcileRow[] = [];
  for (const p of await ledger.projectsWithWallets()) {
    const b = (await ledger.getBalance(p.id))!;
    const open = await ledger.db.selectFrom("payments").select("id").where("project_id", "=", p.id).where("status", "in", ["pending", "processing"]).execute();
    const reversed = await ledger.db.selectFrom("payments").select("fee_micros").where("project_id", "=", p.id).where("status", "=", "reversed").where("rail", "=", "fiat").execute();
    const owed = reversed.reduce((s, r) => s + r.fee_micros, 0);
    const onchain = Number(await balanceOf(p.wallet_address as Address));
    rows.push({ project_id: p.id, wallet: p.wallet_address, onchain_micros: onchain, available_micros: b.available_micros, held_micros: b.held_micros, fees_owed_micros: owed, open_payments: open.length, drift_micros: onchain - (b.available_micros - owed) - (open.length ? b.held_micros : 0) });
  }
  return { ok: rows.every((r) => r.open_payments > 0 || r.drift_micros === 0), rows };
}
