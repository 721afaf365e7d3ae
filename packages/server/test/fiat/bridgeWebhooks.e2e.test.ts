/**
 * Bridge webhooks in live mode: polling is slowed to an hour and the stand-in delivers nothing by
 * itself, so only a webhook the test posts can move a payment. Forged, stale and replayed deliveries
 * change nothing; a valid one moves the payment at once.
 */
import { generateKeyPairSync, createHash, sign } from "node:crypto";
import { describe, expect, test } from "vitest";
import { useBridgeLive } from "../support/bridgeLive.ts";
import { poll } from "../support/poll.ts";

describe("Bridge webhooks (sqlite)", () => {
  const b = useBridgeLive("sqlite", { env: { BRIDGE_POLL_INTERVAL_MS: "3600000" }, webhooks: false });
  const post = (body: string, headers: Record<string, string>) => fetch(`${b.server.baseUrl}/v1/webhooks/bridge`, { method: "POST", headers, body, signal: AbortSignal.timeout(20_000) });
  const transfer = (id: string) => b.standIn.transfers().find((t) => t.id === id)!;
  /** Each wait bounded on its own, so a stall names its step and shows where the payment and the transfer were. */
  async function step<T>(what: string, id: string, fn: () => Promise<T | undefined>): Promise<T> {
    try {
      return await poll(what, fn, 30_000);
    } catch (e) {
      const row = await b.payment(id);
      const t = row.providerRef ? transfer(row.providerRef) : undefined;
      throw new Error(`${(e as Error).message}: payment ${row.status} ${row.railState ?? "-"}; transfer ${t ? t.state : "none"}`);
    }
  }

  test("forged, stale and replayed deliveries change nothing; a valid one completes the payment", async () => {
    b.standIn.pause(true);
    const id = await b.payBank({ name: "Ann Lee", account_number: "12345678", routing_number: "021000021" }, 7);
    // The USDC arrived and Bridge says so; our payment waits on the provider's word.
    const p = await step("the transfer to be funded", id, async () => {
      const row = await b.payment(id);
      return row.providerRef && transfer(row.providerRef).state === "funds_received" ? row : undefined;
    });
    const early = b.standIn.signedEvent(p.providerRef!);
    expect((await post(early.body, early.headers)).status).toBe(202); // read: still funds_received
    // Our side confirms its leg on-chain and then reads the payout once; Bridge must not have paid out before that
    // read, or the payment completes at it without any webhook. So Bridge stays paused until the leg is confirmed.
    await step("the on-chain leg to be confirmed", id, async () => ((await b.payment(id)).railState?.includes('"stage":"payout"') ? true : undefined));
    b.standIn.pause(false);
    await step("Bridge to process the payout", id, async () => (transfer(p.providerRef!).state === "payment_processed" ? true : undefined));

    // Replayed: the event id was processed before.
    const replay = await post(early.body, early.headers);
    expect(replay.status).toBe(409);
    expect(((await replay.json()) as { code: string }).code).toBe("webhook_replayed");
    // Forged: signed with another key.
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey;
    const fresh = b.standIn.signedEvent(p.providerRef!);
    const ts = Date.now();
    const forgedSig = sign("sha256", createHash("sha256").update(`${ts}.${fresh.body}`).digest(), other).toString("base64");
    const forged = await post(fresh.body, { "content-type": "application/json", "x-webhook-signature": `t=${ts},v0=${forgedSig}` });
    expect(forged.status).toBe(401);
    // Tampered: a valid signature over another body.
    const tampered = await post(fresh.body.replace("payment_processed", "payment_processed "), fresh.headers);
    expect(tampered.status).toBe(401);
    // Stale: eleven minutes old.
    const stale = b.standIn.signedEvent(p.providerRef!, Date.now() - 11 * 60_000);
    const staleRes = await post(stale.body, stale.headers);
    expect(staleRes.status).toBe(400);
    expect(((await staleRes.json()) as { code: string }).code).toBe("webhook_stale");
    // Missing signature.
    expect((await post(fresh.body, { "content-type": "application/json" })).status).toBe(401);
    expect((await b.payment(id)).status).toBe("processing");

    // Valid: the payment moves now (polling would take an hour).
    expect((await post(fresh.body, fresh.headers)).status).toBe(202);
    const done = await step("the webhook to complete the payment", id, async () => {
      const row = await b.payment(id);
      return row.status === "completed" || row.status === "failed" ? row : undefined;
    });
    expect(done.status).toBe("completed");
  }, 150_000);
});
