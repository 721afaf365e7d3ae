/**
 * Bridge (bridge.xyz) off-ramp adapter behind the FiatProvider port, as Bridge documents the flow:
 * an external account per distinct bank account under the operator's Bridge customer (created once,
 * then reused: we keep its id under a keyed hash of the bank details, never the account number), a
 * transfer `base/usdc` (from the project wallet) → `ach/usd` (that external account), with the
 * project wallet as its return address; the rail then sends exactly the USDC its
 * `source_deposit_instructions` name. Every POST carries an `Idempotency-Key` derived from what it
 * creates (our payment id for a transfer), so a retry after a crash or a timeout never creates twice.
 * Webhooks and polls only make the rail read the transfer here; its state decides.
 */
import { createHmac } from "node:crypto";
import type { BankRecipient } from "@agentwallet/api";
import type { Logger } from "pino";
import { type Address, getAddress, isAddress } from "viem";
import type { BridgeSettings } from "../../config.ts";
import type { KvStore } from "../../ledger/ports.ts";
import { type FiatProvider, FiatProviderError, type Payout } from "./provider.ts";

export type { BridgeSettings };


/** Backoff between retries of one call: 250 ms, doubling, at most this long (a Retry-After too). */
const RETRY_WAIT_MS_MAX = 4_000;
/** Provider messages kept in the ledger are cut to this length. */
const REASON_CHARS_MAX = 300;

type BridgeTransfer = {
  id: string;
  state: string;
  amount?: string;
  source_deposit_instructions?: { payment_rail?: string; amount?: string; currency?: string; to_address?: string };
  return_instructions?: { address?: string } | null;
  receipt?: { return_reason?: string; refund_tx_hash?: string };
  updated_at?: string;
};

/** `GET /v0/transfers` answers at most this many per page (Bridge's documented maximum). */
export const BRIDGE_LIST_LIMIT_MAX = 100;

/** Key under which a Bridge deposit address is remembered (the deposit watcher ignores refunds from it). */
export const bridgeDepositKey = (address: string) => `bridge:deposit:${address.toLowerCase()}`;

export type BridgeFiatProvider = FiatProvider & { isRefundSender(from: Address): Promise<boolean> };

export function createBridgeFiatProvider(deps: { settings: BridgeSettings; ledger: { kv: KvStore }; logger: Logger; sleep?: (ms: number) => Promise<void> }): BridgeFiatProvider {
  const s = deps.settings;
  const base = s.baseUrl.replace(/\/+$/, "");
  const sleep = deps.sleep ?? ((ms: number) => new Promise((r) => setTimeout(r, ms)));
  const refundSenders = new Set(s.refundFromAddresses.map((a) => a.toLowerCase()));

  /** One API call with bounded retries of transient failures. Never logs the API key or a body. */
  async function call<T>(method: "GET" | "POST", path: string, body?: unknown, idempotencyKey?: string): Promise<{ status: number; json: T }> {
    let last = "";
    for (let attempt = 0; attempt <= s.retries; attempt++) {
      if (attempt > 0) await sleep(Math.min(RETRY_WAIT_MS_MAX, 250 * 2 ** (attempt - 1)));
      let res: Response;
      try {
        res = await fetch(`${base}${path}`, {
          method,
          headers: { "api-key": s.apiKey, accept: "application/json", ...(body !== undefined ? { "content-type": "application/json" } : {}), ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}) },
          body: body === undefined ? undefined : JSON.stringify(body),
          redirect: "manual",
          signal: AbortSignal.timeout(s.timeoutMs),
        });
      } catch (err) {
        last = (err as Error).name === "TimeoutError" ? `no answer within ${s.timeoutMs} ms` : `connection failed (${(err as Error).message})`;
        continue;
      }
      const text = await res.text();
      let json: unknown;
      try {
        json = text ? JSON.parse(text) : undefined;
      } catch {
        json = undefined;
      }
      if (res.status >= 200 && res.status < 300) return { status: res.status, json: json as T };
      const e = (json ?? {}) as { code?: unknown; message?: unknown };
      const what = `${typeof e.message === "string" ? e.message.slice(0, REASON_CHARS_MAX) : `HTTP ${res.status}`}${typeof e.code === "string" ? ` (${e.code})` : ""}`;
      if (res.status === 429 || res.status >= 500) {
        last = `HTTP ${res.status}: ${what}`;
        const after = Number(res.headers.get("retry-after"));
        if (Number.isFinite(after) && after > 0) await sleep(Math.min(RETRY_WAIT_MS_MAX, after * 1_000));
        continue;
      }
      if (res.status === 404 && method === "GET") return { status: 404, json: undefined as T };
      // 401/403: our credentials or Bridge's setup, not the payee's details: retry later, never fail on it.
      if (res.status === 401 || res.status === 403) throw new FiatProviderError("unavailable", `Bridge refused our credentials: ${what}`, res.status, typeof e.code === "string" ? e.code : undefined);
      throw new FiatProviderError("refused", `Bridge refused the payout: ${what}`, res.status, typeof e.code === "string" ? e.code : undefined);
    }
    throw new FiatProviderError("unavailable", `Bridge unavailable after ${s.retries + 1} attempts: ${last}`);
  }

  /** The external account of these bank details, created once under the operator's customer. */
  async function externalAccountOf(r: BankRecipient): Promise<string> {
    // Keyed hash: the same bank details always find the same account; the key keeps a 10-digit
    // account number from being recovered from the hash by trying them all.
    const digest = createHmac("sha256", s.apiKey).update(JSON.stringify([r.routing_number, r.account_number, r.name.trim(), s.checkingOrSavings])).digest("hex");
    const kvKey = `bridge:external_account:${digest}`;
    const known = await deps.ledger.kv.get(kvKey);
    if (known) return known;
    const { json } = await call<{ id?: string }>(
      "POST",
      `/v0/customers/${encodeURIComponent(s.customerId)}/external_accounts`,
      {
        currency: "usd",
        account_type: "us",
        account_owner_name: r.name.trim(),
        account: { account_number: r.account_number, routing_number: r.routing_number, checking_or_savings: s.checkingOrSavings },
      },
      `ea-${digest.slice(0, 48)}`,
    );
    if (!json?.id) throw new FiatProviderError("unavailable", "Bridge created an external account without an id");
    await deps.ledger.kv.set(kvKey, json.id);
    return json.id;
  }

  function toPayout(t: BridgeTransfer, reference: string): Payout {
    const reason = t.receipt?.return_reason ? t.receipt.return_reason.slice(0, REASON_CHARS_MAX) : null;
    const back = t.return_instructions?.address ?? "the return address";
    const p: Payout = { payoutId: t.id, reference, status: "processing", reason };
    const refundTx = t.receipt?.refund_tx_hash;
    if (typeof refundTx === "string" && /^0x[0-9a-fA-F]{64}$/.test(refundTx)) p.refundTxHash = refundTx.toLowerCase();
    const updated = t.updated_at ? Date.parse(t.updated_at) : NaN;
    if (Number.isFinite(updated)) p.updatedAtMs = updated;
    const sdi = t.source_deposit_instructions;
    if (sdi?.to_address && isAddress(sdi.to_address) && sdi.amount) {
      const micros = usdMicros(sdi.amount);
      if (micros !== undefined && sdi.currency === "usdc" && sdi.payment_rail === "base") p.deposit = { address: getAddress(sdi.to_address), amountMicros: micros };
    }
    switch (t.state) {
      case "awaiting_funds":
      case "in_review":
      case "funds_received":
      case "payment_submitted":
        return p;
      case "payment_processed":
        return { ...p, status: "completed" };
      case "returned":
        // Paid out, then returned: the USD came back to Bridge and the USDC refund is under way.
        return { ...p, status: "completed", note: `ACH return${reason ? ` (${reason})` : ""}: Bridge is refunding the USDC to ${back}` };
      case "refunded":
        return { ...p, status: "refunded", reason: reason ?? "Bridge refunded the transfer", note: `USDC refunded by Bridge to ${back}${t.receipt?.refund_tx_hash ? ` in ${t.receipt.refund_tx_hash}` : ""}` };
      case "canceled":
        return { ...p, status: "failed", reason: "Bridge canceled the transfer before any USDC arrived" };
      case "error":
      case "undeliverable":
      case "refund_in_flight":
      case "refund_failed":
      case "missing_return_policy":
      default:
        return { ...p, note: `Bridge transfer ${t.state}${reason ? ` (${reason})` : ""}: the USDC is with Bridge until it is refunded to ${back}` };
    }
  }

  return {
    name: "bridge",
    flow: "payout_first",
    pollIntervalMs: s.pollIntervalMs,
    estimatedArrival: "1-3 business days",
    async createPayout(req) {
      const externalAccountId = await externalAccountOf(req.recipient);
      const amount = `${Math.floor(req.amountCents / 100)}.${String(req.amountCents % 100).padStart(2, "0")}`;
      const { json } = await call<BridgeTransfer>(
        "POST",
        "/v0/transfers",
        {
          amount,
          on_behalf_of: s.customerId,
          source: { payment_rail: "base", currency: "usdc", from_address: req.refundAddress },
          destination: { payment_rail: "ach", currency: "usd", external_account_id: externalAccountId },
          // A failed payout's USDC comes back to the project wallet it left from.
          return_instructions: { address: req.refundAddress },
        },
        `transfer-${req.reference}`,
      );
      if (!json?.id) throw new FiatProviderError("unavailable", "Bridge created a transfer without an id");
      const payout = toPayout(json, req.reference);
      if (payout.deposit) await deps.ledger.kv.set(bridgeDepositKey(payout.deposit.address), json.id);
      return payout;
    },
    async getPayout(id) {
      const { status, json } = await call<BridgeTransfer>("GET", `/v0/transfers/${encodeURIComponent(id)}`);
      if (status === 404 || !json) return undefined;
      return toPayout(json, "");
    },
    async changedSince(afterMs, limit) {
      const n = Math.max(1, Math.min(BRIDGE_LIST_LIMIT_MAX, limit));
      const { json } = await call<{ data?: BridgeTransfer[] }>("GET", `/v0/transfers?updated_after_ms=${Math.max(0, Math.floor(afterMs))}&limit=${n}`);
      const data = Array.isArray(json?.data) ? json.data : [];
      return data.filter((t) => typeof t?.id === "string" && typeof t.state === "string").map((t) => toPayout(t, ""));
    },
    async isRefundSender(from) {
      return refundSenders.has(from.toLowerCase()) || (await deps.ledger.kv.get(bridgeDepositKey(from))) !== undefined;
    },
  };
}

/** "10.25" (USD/USDC decimal text) → micro-USDC, exactly; undefined when not a plain decimal. */
export function usdMicros(v: string): number | undefined {
  if (!/^\d{1,12}(\.\d{1,6})?$/.test(v)) return undefined;
  const [whole, frac = ""] = v.split(".");
  return Number(whole) * 1_000_000 + Number(frac.padEnd(6, "0"));
}
