/**
 * kill -9 of a live server using Bridge, at the two moments that matter: after Bridge created the
 * transfer but before we learnt of it (so before any USDC was sent), and after the USDC was sent but
 * before Bridge's outcome arrived. After a restart each payment has exactly one transfer at Bridge
 * and its USDC went on-chain exactly once.
 */
import type { Address } from "viem";
import { describe, expect, test } from "vitest";
import { useBridgeLive } from "../support/bridgeLive.ts";
import { dialects } from "../support/db.ts";
import { poll } from "../support/poll.ts";

const bank = { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" };

describe.each(dialects)("crash with Bridge (%s)", (dialect) => {
  const b = useBridgeLive(dialect);
  const transfersOf = (paymentAmount: string) => b.standIn.transfers().filter((t) => t.amount === paymentAmount);

  test("kill -9 between creating the transfer and sending the USDC", async () => {
    b.standIn.holdTransferAnswers(true);
    const id = await b.payBank(bank, 6.11);
    await poll("Bridge to create the transfer", async () => (transfersOf("6.11").length === 1 ? true : undefined));
    await b.kill9();
    const p0 = await b.payment(id);
    expect(p0.status).toBe("pending");
    expect(p0.providerRef).toBeNull(); // we never heard back
    b.standIn.holdTransferAnswers(false);
    await b.restart();
    const p = await b.until(id, ["completed", "failed"]);
    expect(p.status).toBe("completed");
    const ts = transfersOf("6.11");
    expect(ts).toHaveLength(1);
    expect(p.providerRef).toBe(ts[0]!.id);
    expect(await b.sentTo(ts[0]!.source_deposit_instructions.to_address as Address)).toEqual([6_110_000n]);
  }, 300_000);

  test("kill -9 between sending the USDC and Bridge's webhook", async () => {
    b.standIn.pause(true);
    const id = await b.payBank(bank, 6.22);
    await poll("the USDC to reach Bridge", async () => (transfersOf("6.22")[0]?.state === "funds_received" ? true : undefined));
    await b.kill9();
    expect((await b.payment(id)).status).toBe("processing");
    // Bridge moves on and tries to tell us while we are down.
    b.standIn.pause(false);
    await poll("Bridge to process the payout", async () => (transfersOf("6.22")[0]?.state === "payment_processed" ? true : undefined));
    await b.restart();
    const p = await b.until(id, ["completed", "failed"]);
    expect(p.status).toBe("completed");
    const ts = transfersOf("6.22");
    expect(ts).toHaveLength(1);
    expect(await b.sentTo(ts[0]!.source_deposit_instructions.to_address as Address)).toEqual([6_220_000n]);
    expect((await b.ledger.verify()).problems).toEqual([]);
  }, 300_000);
});
