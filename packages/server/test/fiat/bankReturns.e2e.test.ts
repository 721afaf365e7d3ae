/**
 * A completed bank payment stays watched for an ACH return (rails/fiat/returnWatch.ts): with no webhook key
 * configured, and when Bridge's webhook events for the return are lost, the return is read from Bridge's
 * list of changed transfers (or, when the list overflows, by reading each watched transfer) and reversed
 * through the ledger; an on-chain refund from Bridge that no payment accounts for is named by `reconcile`
 * and never credited. Live mode (`agentwallet serve`) against the Bridge stand-in, on SQLite and PostgreSQL.
 */
import { type Address, type Hex, createPublicClient, createWalletClient, erc20Abi, http } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { reconcile } from "../../src/services/reconcile.ts";
import { type BridgeLive, useBridgeLive } from "../support/bridgeLive.ts";
import { dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";
import { journalEntries, returnWatchRow } from "../../src/ledger/testing.ts";

const bank = (account_number: string) => ({ name: "Ann Lee", account_number, routing_number: "021000021" });

/** Pays, waits for completion, has Bridge return the transfer, and waits for the refund on-chain. */
async function payThenReturn(b: BridgeLive, amountUsd: number): Promise<{ id: string; transferId: string }> {
  const id = await b.payBank(bank("12345678"), amountUsd);
  const done = await b.until(id, ["completed", "failed"]);
  expect(done.status).toBe("completed");
  b.standIn.returnTransfer(done.providerRef!, "R10: Customer advises not authorized");
  await poll("Bridge to refund the returned transfer", async () => (b.standIn.transfers().find((t) => t.id === done.providerRef)!.state === "refunded" ? true : undefined), 30_000);
  return { id, transferId: done.providerRef! };
}

describe.each(dialects)("bank returns with no webhook key (%s)", (dialect) => {
  const b = useBridgeLive(dialect, {
    env: { BRIDGE_WEBHOOK_PUBLIC_KEY: undefined, FIAT_RETURN_WATCH_INTERVAL_MS: "200", BRIDGE_REFUND_FROM_ADDRESSES: "0x976EA74026E726554dB657fA54763abd0C3a0aa9" },
    webhooks: false,
  });
  const balance = async () => (await b.ledger.balances.get(b.projectId))!;

  test("a transfer Bridge returns and refunds after payment_processed becomes reversed, the amount credited back and the fee kept", async () => {
    const before = await balance();
    const { id, transferId } = await payThenReturn(b, 6);
    const p = await b.until(id, ["reversed"], 30_000);
    expect(p.failureCode).toBe("ach_returned");
    expect(p.failureReason).toContain("R10");
    const after = await balance();
    expect(before.available_micros - after.available_micros).toBe(p.feeMicros);
    expect(after.total_funded_micros).toBe(before.total_funded_micros);
    // The wallet holds what the ledger says: the refund is accounted for by the reversed payment.
    const refundTx = b.standIn.transfers().find((t) => t.id === transferId)!.receipt.refund_tx_hash!;
    expect(p.refundTxHash).toBe(refundTx.toLowerCase());
    const report = await reconcile(b.ledger, (a) => b.usdc(a as Address));
    expect(report.rows.find((r) => r.project_id === b.projectId)!.drift_micros).toBe(0);
    expect(report.unmatched_refunds.map((r) => r.tx_hash)).not.toContain(refundTx.toLowerCase());
    // The watch's cursor and lease are in the database, so any process of the deployment goes on from it.
    const state = (await returnWatchRow(b.ledger, "bridge"))!;
    expect(state.cursor_ms).toBeGreaterThan(Date.now() - 3_600_000);
  });

  test("an on-chain refund from Bridge that matches no transfer is reported by reconcile and not credited", async () => {
    await poll("every payment to settle", async () => ((await b.ledger.payments.openPaymentCount()) === 0 ? true : undefined));
    const before = await balance();
    // A refund address Bridge sends from (BRIDGE_REFUND_FROM_ADDRESSES) pays the wallet for no payment of ours.
    const sender = privateKeyToAccount(b.dev.accounts.other.privateKey);
    expect(sender.address).toBe("0x976EA74026E726554dB657fA54763abd0C3a0aa9");
    await b.dev.mint(sender.address, 2_500_000n);
    const wallet = createWalletClient({ account: sender, transport: http(b.dev.rpcUrl) });
    const publicClient = createPublicClient({ transport: http(b.dev.rpcUrl) });
    const hash = await wallet.writeContract({ address: b.dev.usdcAddress, abi: erc20Abi, functionName: "transfer", args: [b.wallet, 2_500_000n], chain: null });
    const report = await poll("reconcile to name the refund", async () => {
      const r = await reconcile(b.ledger, (a) => b.usdc(a as Address), undefined, async (h) => (await publicClient.getTransactionReceipt({ hash: h as Hex }).catch(() => undefined))?.status === "success");
      return r.unmatched_refunds.some((x) => x.tx_hash === hash.toLowerCase()) ? r : undefined;
    }, 30_000);
    expect(report.ok).toBe(false);
    const named = report.unmatched_refunds.find((x) => x.tx_hash === hash.toLowerCase())!;
    expect(named).toMatchObject({ project_id: b.projectId, amount_micros: 2_500_000, from_address: sender.address });
    const after = await balance();
    expect(after.available_micros).toBe(before.available_micros);
    expect(after.pending_micros).toBe(before.pending_micros);
    expect(after.total_funded_micros).toBe(before.total_funded_micros);
  });
});

describe.each(dialects)("bank returns whose webhook events were lost (%s)", (dialect) => {
  // One payout a pass: Bridge's list is then always full, so the return is found by the sweep's direct reads.
  const b = useBridgeLive(dialect, { env: { FIAT_RETURN_WATCH_INTERVAL_MS: "200", FIAT_RETURN_WATCH_BATCH: "1" } });

  test("a return whose events never arrive is caught up, within a bounded pass, and reversed once", async () => {
    const other = await b.payBank(bank("87654321"), 2);
    expect((await b.until(other, ["completed", "failed"])).status).toBe("completed");
    const before = (await b.ledger.balances.get(b.projectId))!;
    b.standIn.dropWebhooks(true);
    const { id } = await payThenReturn(b, 3);
    const p = await b.until(id, ["reversed"], 30_000);
    expect(p.failureCode).toBe("ach_returned");
    const after = (await b.ledger.balances.get(b.projectId))!;
    expect(before.available_micros - after.available_micros).toBe(p.feeMicros);
    // Reversed once: one `reverse` movement in the journal for it.
    const reversals = await journalEntries(b.ledger, { projectId: b.projectId, kind: "reverse" });
    expect(reversals).toHaveLength(1);
    expect((await b.payment(other)).status).toBe("completed");
  });
});
