/**
 * Live mode end to end with the Bridge adapter: `agentwallet serve` (BASE_RPC_URL + BRIDGE_*) on the
 * Base stand-in chain against the Bridge stand-in, on SQLite and on PostgreSQL.
 */
import { BRIDGE_ERROR_ACCOUNT, BRIDGE_RETURN_ACCOUNT } from "@agentwallet/devchain";
import type { Address } from "viem";
import { describe, expect, test } from "vitest";
import { useBridgeLive } from "../support/bridgeLive.ts";
import { dialects } from "../support/db.ts";
import { kvRows, paymentRows } from "../../src/ledger/testing.ts";

const bank = (account_number: string, name = "Ann Lee") => ({ name, account_number, routing_number: "021000021" });

describe.each(dialects)("Bridge in live mode on the Base stand-in (%s)", (dialect) => {
  const b = useBridgeLive(dialect);
  const transferOf = (id: string) => b.standIn.transfers().find((t) => t.id === id)!;
  const balance = async () => (await b.ledger.balances.get(b.projectId))!;

  test("a payment creates the external account once, the transfer, sends exactly the deposit amount, and completes on payment_processed", async () => {
    const first = await b.payBank(bank("12345678"), 10.25);
    const p1 = await b.until(first, ["completed", "failed"]);
    expect(p1.status).toBe("completed");
    const t1 = transferOf(p1.providerRef!);
    expect(t1.state).toBe("payment_processed");
    expect(t1.amount).toBe("10.25");
    expect(t1.source).toEqual({ payment_rail: "base", currency: "usdc", from_address: b.wallet });
    expect(await b.sentTo(t1.source_deposit_instructions.to_address as Address)).toEqual([10_250_000n]);
    expect(b.standIn.externalAccountCount()).toBe(1);

    const second = await b.payBank(bank("12345678"), 3);
    const p2 = await b.until(second, ["completed", "failed"]);
    expect(p2.status).toBe("completed");
    expect(b.standIn.externalAccountCount()).toBe(1); // reused
    expect(await b.sentTo(transferOf(p2.providerRef!).source_deposit_instructions.to_address as Address)).toEqual([3_000_000n]);

    // The account number is Bridge's to keep: not in our payments, nor in our key-value state.
    const rows = await paymentRows(b.ledger, { ids: [first, second] });
    for (const r of rows) expect(r.recipient_json).not.toContain("12345678");
    const kv = await kvRows(b.ledger);
    for (const r of kv) expect(`${r.key} ${r.value}`).not.toContain("12345678");
    expect(b.server.output()).not.toContain(b.standIn.apiKey);
  });

  test("one returned after completion becomes reversed and is credited back once the refund is on-chain", async () => {
    const before = await balance();
    const walletBefore = await b.usdc(b.wallet);
    const id = await b.payBank(bank(BRIDGE_RETURN_ACCOUNT), 4);
    const p = await b.until(id, ["reversed", "failed"]);
    expect(p.status).toBe("reversed");
    const t = transferOf(p.providerRef!);
    expect(t.state).toBe("refunded");
    expect(p.failureReason).toContain("R01");
    const after = await balance();
    expect(p.failureCode).toBe("ach_returned");
    // The ledger's rule for a return: the amount is credited back, the fee stays earned (swept to the
    // treasury); Bridge refunded exactly the amount to the wallet.
    expect(before.available_micros - after.available_micros).toBe(p.feeMicros);
    expect(walletBefore - (await b.usdc(b.wallet))).toBe(BigInt(p.feeMicros));
    // Bridge's refund is not taken for a deposit.
    expect(after.total_funded_micros).toBe(before.total_funded_micros);
  });

  test("one Bridge refuses at creation fails at once with Bridge's reason, and nothing is sent", async () => {
    const before = await balance();
    const transfers = b.standIn.transfers().length;
    const walletBefore = await b.usdc(b.wallet);
    const id = await b.payBank(bank("55556666", "Al"), 2);
    const p = await b.until(id, ["failed", "completed"]);
    expect(p.status).toBe("failed");
    expect(p.failureCode).toBe("payout_refused");
    expect(p.failureReason).toContain("account_owner_name must be 3 to 35 printable ASCII characters");
    expect(p.txHash).toBeNull();
    expect(b.standIn.transfers().length).toBe(transfers);
    expect(await b.usdc(b.wallet)).toBe(walletBefore);
    expect((await balance()).available_micros).toBe(before.available_micros);
  });

  test("one whose transfer errors after the USDC arrived is followed to its refund on-chain, then fails credited back", async () => {
    const before = await balance();
    const walletBefore = await b.usdc(b.wallet);
    const id = await b.payBank(bank(BRIDGE_ERROR_ACCOUNT), 5);
    const p = await b.until(id, ["failed", "completed"]);
    expect(p.status).toBe("failed");
    expect(p.failureCode).toBe("payout_failed");
    const t = transferOf(p.providerRef!);
    expect(t.state).toBe("refunded");
    expect(await b.sentTo(t.source_deposit_instructions.to_address as Address)).toEqual([5_000_000n]);
    expect(t.receipt.refund_tx_hash).toMatch(/^0x/);
    expect(await b.usdc(b.wallet)).toBe(walletBefore);
    const after = await balance();
    expect(after.available_micros).toBe(before.available_micros);
    expect(after.total_funded_micros).toBe(before.total_funded_micros);
  });

  test("the ledger verifies", async () => {
    const v = await b.ledger.verify();
    expect(v.problems).toEqual([]);
  });
});
