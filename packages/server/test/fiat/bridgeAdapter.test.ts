/**
 * The Bridge adapter against the Bridge stand-in (devchain) on a local chain, and Bridge's webhook
 * signature check against the test vector Bridge publishes.
 */
import { type BridgeStandIn, type DevChain, startBridgeStandIn, startDevChain } from "@agentwallet/devchain";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { type BridgeFiatProvider, createBridgeFiatProvider } from "../../src/rails/fiat/bridgeProvider.ts";
import { FiatProviderError } from "../../src/rails/fiat/provider.ts";
import { verifyBridgeWebhook } from "../../src/rails/fiat/verifyBridgeWebhook.ts";
import { type TestDb, createTestDb, ledgerOn } from "../support/db.ts";

// Published with Bridge's "Webhook Event Signature Verification" page.
const BRIDGE_DOC_KEY = `-----BEGIN PUBLIC KEY-----
MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAtqsEE4eI7EmzhcquGJXt
LX9PMK0UH6Kl1WIR21sv8HtueG8BuvvpP3MiN7ltzmIhS8KaynCjN4l+620PnXeu
xWG+CSnEdkinL9hCqbEid5vv9zl0j9LWiJx3FkKHqADU7cgm46aa8dKUdIQYF2X+
O7WmyLkC4wUM/mWhBPMsIQBznashRMZxx7XJjsVp27ACUE4eNIjEXbVYN6U8jSbU
hG++CfL8xXu+GHDqKmFE6Po6HnuURvLFVnCtE3mXXBcVFlPy+octfx8nOMLT3X8O
9UehIigJ34o2yMm/Fq3HUJzg2BsiAiGgtr0vmeoV9Q7upSNj9TuOumAzZFi4pYA+
qwIDAQAB
-----END PUBLIC KEY-----`;
const BRIDGE_DOC_HEADER =
  "t=1705854411204,v0=jz/0dmHJ63FAzacGutrDTEoq+iSz/PHm/ugdooXDQu5NwuVIT2LmZGjsnCsBHgR9Py6OBP9zurzW4dHgygU4EDqmMPTUOvhvndYb4lWt+TY66LihaFI2whL6DAf/jb1QjYjNU0A6x9SLzC45dgE6X7zTDUM+2Z+scG/WEQf6SxQMt4E2sEipl5PqMK5lYUe3otdJV+X2c9D64bGwCEE7QSia+Vhozg8QNOQEk/rdz2IEONIg6oC43CeiN4E2kF9XLAGuy9uAHx9O9OJH5ZPLJZjyo4VcXYeWQgxaQ1gZ1Qu6hEEzgiPSff/1nou58dm4bIIazgCWli/mO0NyGcpfFw==";
const BRIDGE_DOC_BODY = '{"message":"Hello World!"}';
const BRIDGE_DOC_T = 1705854411204;

describe("Bridge webhook signature", () => {
  test("default: Bridge's published test vector verifies", () => {
    expect(verifyBridgeWebhook({ publicKeyPem: BRIDGE_DOC_KEY, header: BRIDGE_DOC_HEADER, rawBody: BRIDGE_DOC_BODY, nowMs: BRIDGE_DOC_T + 1_000 })).toEqual({ ok: true });
  });
  test("error: a changed body is forged", () => {
    expect(verifyBridgeWebhook({ publicKeyPem: BRIDGE_DOC_KEY, header: BRIDGE_DOC_HEADER, rawBody: '{"message":"Hello World?"}', nowMs: BRIDGE_DOC_T })).toEqual({ ok: false, reason: "forged" });
  });
  test("error: a delivery older than 10 minutes is stale", () => {
    expect(verifyBridgeWebhook({ publicKeyPem: BRIDGE_DOC_KEY, header: BRIDGE_DOC_HEADER, rawBody: BRIDGE_DOC_BODY, nowMs: BRIDGE_DOC_T + 10 * 60_000 + 1 })).toEqual({ ok: false, reason: "stale" });
  });
  test("error: a missing or malformed header", () => {
    expect(verifyBridgeWebhook({ publicKeyPem: BRIDGE_DOC_KEY, header: undefined, rawBody: BRIDGE_DOC_BODY, nowMs: BRIDGE_DOC_T }).ok).toBe(false);
    expect(verifyBridgeWebhook({ publicKeyPem: BRIDGE_DOC_KEY, header: "v0=abc,t=1", rawBody: BRIDGE_DOC_BODY, nowMs: BRIDGE_DOC_T })).toEqual({ ok: false, reason: "malformed" });
  });
});

describe("Bridge adapter against the stand-in", () => {
  let dev: DevChain;
  let standIn: BridgeStandIn;
  let db: TestDb;
  let bridge: BridgeFiatProvider;
  const wallet = "0x90F79bf6EB2c4f870365E785982E1f101E93b906" as const;
  const ann = { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" };
  beforeAll(async () => {
    dev = await startDevChain({ usdcAddress: BASE_USDC_ADDRESS });
    standIn = await startBridgeStandIn({ rpcUrl: dev.rpcUrl, chainId: dev.chainId, usdcAddress: dev.usdcAddress });
    db = await createTestDb("sqlite");
    const ledger = ledgerOn(db);
    bridge = createBridgeFiatProvider({
      settings: { apiKey: standIn.apiKey, customerId: standIn.customerId, baseUrl: standIn.url, webhookPublicKey: standIn.webhookPublicKey, checkingOrSavings: "checking", pollIntervalMs: 1_000, timeoutMs: 5_000, retries: 2, refundFromAddresses: [] },
      ledger,
      logger: pino({ level: "silent" }),
      sleep: async () => undefined,
    });
  });
  afterAll(async () => {
    await standIn?.stop();
    await dev?.stop();
    await db?.drop();
  });

  test("default: a payout names its deposit address and exactly its amount; the bank account is created once", async () => {
    const a = await bridge.createPayout({ reference: "pay_a", amountCents: 1_025, recipient: ann, refundAddress: wallet });
    const b = await bridge.createPayout({ reference: "pay_b", amountCents: 300, recipient: ann, refundAddress: wallet });
    expect(a.status).toBe("processing");
    expect(a.deposit?.amountMicros).toBe(10_250_000);
    expect(b.deposit?.amountMicros).toBe(3_000_000);
    expect(a.deposit?.address).not.toBe(b.deposit?.address);
    expect(standIn.externalAccountCount()).toBe(1);
    const t = standIn.transfers().find((x) => x.id === a.payoutId)!;
    expect(t.source).toEqual({ payment_rail: "base", currency: "usdc", from_address: wallet });
    expect(t.destination.payment_rail).toBe("ach");
    expect(t.return_instructions).toEqual({ address: wallet });
    // The deposit address is known as a refund sender (the deposit watcher does not credit refunds).
    expect(await bridge.isRefundSender(a.deposit!.address)).toBe(true);
  });

  test("behavior: the same payment id never creates a second transfer (Idempotency-Key)", async () => {
    const before = standIn.transfers().length;
    const a = await bridge.createPayout({ reference: "pay_same", amountCents: 500, recipient: ann, refundAddress: wallet });
    const again = await bridge.createPayout({ reference: "pay_same", amountCents: 500, recipient: ann, refundAddress: wallet });
    expect(again.payoutId).toBe(a.payoutId);
    expect(standIn.transfers().length).toBe(before + 1);
  });

  test("behavior: 503s and 429s are retried within the bound", async () => {
    standIn.injectFault({ method: "POST", pathPrefix: "/v0/transfers", status: 503, times: 1 });
    standIn.injectFault({ method: "POST", pathPrefix: "/v0/transfers", status: 429, times: 1 });
    const p = await bridge.createPayout({ reference: "pay_retry", amountCents: 100, recipient: ann, refundAddress: wallet });
    expect(p.payoutId).toMatch(/^transfer_/);
  });

  test("error: past the retry bound the provider is unavailable, not refused", async () => {
    standIn.injectFault({ method: "GET", pathPrefix: "/v0/transfers/", status: 500, times: 3 });
    const err = await bridge.getPayout("transfer_x").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FiatProviderError);
    expect((err as FiatProviderError).kind).toBe("unavailable");
  });

  test("error: details Bridge refuses fail with Bridge's reason", async () => {
    const err = await bridge.createPayout({ reference: "pay_al", amountCents: 100, recipient: { ...ann, name: "Al" }, refundAddress: wallet }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FiatProviderError);
    expect((err as FiatProviderError).kind).toBe("refused");
    expect((err as Error).message).toContain("account_owner_name must be 3 to 35 printable ASCII characters");
  });

  test("behavior: an unknown transfer reads as none", async () => {
    expect(await bridge.getPayout("transfer_unknown")).toBeUndefined();
  });
});
