/**
 * A stand-in for the parts of Bridge's API (api.bridge.xyz, `/v0`) that an off-ramp adapter uses, built
 * from Bridge's public documentation (README.md says which pages and what it leaves out). It runs on
 * loopback over a local chain: a transfer's state moves when the USDC really arrives at its deposit
 * address, and a refund is real USDC sent back on-chain to the transfer's return address. Every state
 * change is delivered as a webhook signed the way Bridge signs them (RSA over the SHA-256 digest of
 * `<timestamp ms>.<raw body>`, header `X-Webhook-Signature: t=<ms>,v0=<base64>`).
 *
 * Outcomes by the external account's account number (any routing number):
 *   2222000000 → payment_processed, then (once that was read) an ACH return: returned → (refund on-chain) → refunded
 *   4444000000 → funds_received, then error → (refund on-chain) → refunded
 *   anything else → funds_received → payment_submitted → payment_processed
 */
import { createHash, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Address, type Hex, createTestClient, getAddress, http, isAddress, parseAbiItem } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { testUsdcAbi } from "./artifacts.ts";
import { RECEIPT_TIMEOUT_MS, devChainDefinition, devPublicClient, devWalletClient } from "./chain.ts";

export const BRIDGE_RETURN_ACCOUNT = "2222000000";
export const BRIDGE_ERROR_ACCOUNT = "4444000000";

/** Each webhook event is delivered at most this many times (Bridge retries failed deliveries). */
const WEBHOOK_ATTEMPTS_MAX = 20;
const WEBHOOK_TIMEOUT_MS = 5_000;
/** Blocks read per eth_getLogs call. */
const LOG_RANGE_MAX = 1_000n;
const BODY_BYTES_MAX = 64 * 1024;
/** `GET /v0/transfers`: at most this many per page (Bridge: default 10, max 100). */
const LIST_LIMIT_MAX = 100;

type TransferState =
  | "awaiting_funds"
  | "funds_received"
  | "payment_submitted"
  | "payment_processed"
  | "returned"
  | "refund_in_flight"
  | "refunded"
  | "error"
  | "canceled";

type ExternalAccount = {
  id: string;
  customer_id: string;
  account_type: "us";
  currency: "usd";
  account_owner_name: string;
  bank_name: string | null;
  last_4: string;
  active: boolean;
  account: { last_4: string; routing_number: string; checking_or_savings: "checking" | "savings" };
  created_at: string;
  updated_at: string;
  /** Kept by the stand-in only to choose a test outcome; never returned. */
  _accountNumber: string;
};

type Transfer = {
  id: string;
  state: TransferState;
  on_behalf_of: string;
  amount: string;
  developer_fee: string;
  currency: "usd";
  source: { payment_rail: "base"; currency: "usdc"; from_address: Address };
  destination: { payment_rail: "ach"; currency: "usd"; external_account_id: string };
  source_deposit_instructions: { payment_rail: "base"; amount: string; currency: "usdc"; from_address: Address; to_address: Address };
  return_instructions: { address: Address } | null;
  receipt: { initial_amount: string; developer_fee: string; exchange_fee: string; final_amount: string; source_tx_hash?: Hex; refund_tx_hash?: Hex; return_reason?: string };
  created_at: string;
  updated_at: string;
  /** Stand-in bookkeeping, never returned. */
  _depositKey: Hex;
  _receivedMicros: string;
  _nextAt: number;
  /** A return comes only after the payout was read as processed (an ACH return comes days later). */
  _seenProcessed?: boolean;
};

type Stored = { customers: string[]; externalAccounts: ExternalAccount[]; transfers: Transfer[]; idempotency: Record<string, { status: number; body: unknown }>; scannedBlock: string };

type Event = { id: string; body: string; attempts: number; nextAt: number };

export type BridgeStandInOptions = {
  rpcUrl: string;
  chainId: number;
  usdcAddress: Address;
  /** Funds each deposit address with gas for its refund (anvil_setBalance). */
  apiKey?: string;
  customerId?: string;
  /** Where signed webhooks go; none are sent until it is set. */
  webhookUrl?: string;
  /** Delay between automatic state steps after the funds arrived. */
  stepMs?: number;
  /** How often the chain is read and states move. */
  tickMs?: number;
  /** Keep the state in this file between runs (the sandbox); tests keep it in memory. */
  statePath?: string;
  port?: number;
};

export type BridgeStandIn = {
  url: string;
  apiKey: string;
  customerId: string;
  /** PEM of the key its webhooks verify with (what Bridge shows for a webhook endpoint). */
  webhookPublicKey: string;
  setWebhookUrl(url: string | undefined): void;
  /** While paused, arriving funds are recorded (funds_received) but nothing moves further. */
  pause(paused: boolean): void;
  /**
   * While held, a transfer is created (and its Idempotency-Key recorded) but the answer waits until
   * released: the caller can die between Bridge creating the transfer and learning of it.
   */
  holdTransferAnswers(held: boolean): void;
  /**
   * While dropping, state changes make no webhook event at all: as when a deployment was down longer than
   * Bridge retries a delivery. Only reading the transfers shows them.
   */
  dropWebhooks(dropping: boolean): void;
  /**
   * An ACH return of a paid-out transfer (`payment_processed`), as a bank sends one days later:
   * `returned` at once, then the USDC is refunded on-chain to the return address (`refunded`).
   */
  returnTransfer(transferId: string, reason?: string): void;
  /** Refuse the next `times` calls of `method path-prefix` with this HTTP status (503, 429 …). */
  injectFault(f: { method: string; pathPrefix: string; status: number; times: number }): void;
  transfers(): Omit<Transfer, "_depositKey" | "_receivedMicros" | "_nextAt">[];
  externalAccountCount(): number;
  /** A signed webhook delivery of the transfer's current state: body and headers, for tests to post. */
  signedEvent(transferId: string, timestampMs?: number): { body: string; headers: Record<string, string> };
  /** Signs an arbitrary body with the stand-in's key (Bridge's scheme). */
  sign(body: string, timestampMs: number): string;
  tick(): Promise<void>;
  stop(): Promise<void>;
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly key?: string,
  ) {
    super(message);
  }
}

const usdcTransfer = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

/** "10.25" → 10_250_000 micro-USDC; undefined when not a positive decimal with at most 2 places. */
function centsString(v: unknown): bigint | undefined {
  if (typeof v !== "string" || !/^\d{1,12}(\.\d{1,2})?$/.test(v)) return undefined;
  const [whole, frac = ""] = v.split(".");
  const cents = BigInt(whole!) * 100n + BigInt(frac.padEnd(2, "0"));
  return cents > 0n ? cents : undefined;
}

export async function startBridgeStandIn(o: BridgeStandInOptions): Promise<BridgeStandIn> {
  const chain = devChainDefinition(o.chainId, o.rpcUrl);
  const publicClient = devPublicClient(chain);
  const testClient = createTestClient({ mode: "anvil", chain, transport: http(o.rpcUrl) });
  const stepMs = o.stepMs ?? 200;
  const keys = loadKeys(o.statePath);
  const st: Stored = o.statePath && existsSync(o.statePath) ? (JSON.parse(readFileSync(o.statePath, "utf8")).state as Stored) : { customers: [], externalAccounts: [], transfers: [], idempotency: {}, scannedBlock: "0" };
  const apiKey = o.apiKey ?? keys.apiKey;
  const customerId = o.customerId ?? keys.customerId;
  if (!st.customers.includes(customerId)) st.customers.push(customerId);
  let webhookUrl = o.webhookUrl;
  let paused = false;
  let dropping = false;
  let held: Promise<void> = Promise.resolve();
  let release: (() => void) | undefined;
  const faults: { method: string; pathPrefix: string; status: number; times: number }[] = [];
  const events: Event[] = [];
  const save = () => {
    if (o.statePath) writeFileSync(o.statePath, JSON.stringify({ keys, state: st }), { mode: 0o600 });
  };
  const now = () => new Date().toISOString();
  const id = (prefix: string) => `${prefix}_${randomBytes(12).toString("hex")}`;
  const pub = <T extends object>(x: T) => Object.fromEntries(Object.entries(x).filter(([k]) => !k.startsWith("_")));

  function signBody(body: string, ts: number): string {
    const digest = createHash("sha256").update(`${ts}.${body}`).digest();
    return `t=${ts},v0=${sign("sha256", digest, keys.privateKeyPem).toString("base64")}`;
  }
  function eventBody(t: Transfer): string {
    return JSON.stringify({
      api_version: "v0",
      event_id: id("wh_evt"),
      event_category: "transfer",
      event_type: "transfer.updated.status_transitioned",
      event_object_id: t.id,
      event_object_status: t.state,
      event_object: pub(t),
      event_created_at: now(),
    });
  }
  function moveTo(t: Transfer, state: TransferState, extra: Partial<Transfer["receipt"]> = {}) {
    t.state = state;
    t.updated_at = now();
    t.receipt = { ...t.receipt, ...extra };
    t._nextAt = Date.now() + stepMs;
    if (!dropping) events.push({ id: t.id, body: eventBody(t), attempts: 0, nextAt: 0 });
    save();
  }

  // ------------------------------------------------------------------------------------------- API

  async function readJson(req: IncomingMessage): Promise<Record<string, unknown>> {
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const c of req) {
      size += (c as Buffer).length;
      if (size > BODY_BYTES_MAX) throw new HttpError(413, "payload_too_large", "Request body is too large.");
      chunks.push(c as Buffer);
    }
    try {
      const v = JSON.parse(Buffer.concat(chunks).toString("utf8") || "null");
      if (!v || typeof v !== "object" || Array.isArray(v)) throw new Error("not an object");
      return v as Record<string, unknown>;
    } catch {
      throw new HttpError(400, "invalid_json", "The request body is not a JSON object.");
    }
  }

  function createExternalAccount(customer: string, b: Record<string, unknown>): { status: number; body: unknown } {
    if (!st.customers.includes(customer)) throw new HttpError(404, "not_found", `Customer ${customer} not found.`);
    if (b.currency !== "usd") throw new HttpError(400, "invalid_parameters", "currency must be usd.", "currency");
    if (b.account_type !== "us") throw new HttpError(400, "invalid_parameters", "account_type must be us.", "account_type");
    const name = b.account_owner_name;
    // Bridge: for ach or wire, 3 to 35 characters of printable ASCII.
    if (typeof name !== "string" || name.length < 3 || name.length > 35 || !/^(?!\s*$)[\x20-\x7E]*$/.test(name)) {
      throw new HttpError(400, "invalid_parameters", "account_owner_name must be 3 to 35 printable ASCII characters for ACH.", "account_owner_name");
    }
    const a = b.account as Record<string, unknown> | undefined;
    if (!a || typeof a !== "object") throw new HttpError(400, "invalid_parameters", "account is required for account_type us.", "account");
    if (typeof a.account_number !== "string" || !/^\d{4,17}$/.test(a.account_number)) throw new HttpError(400, "invalid_parameters", "account.account_number must be 4 to 17 digits.", "account.account_number");
    if (typeof a.routing_number !== "string" || !/^\d{9}$/.test(a.routing_number)) throw new HttpError(400, "invalid_parameters", "account.routing_number must be 9 digits.", "account.routing_number");
    if (a.checking_or_savings !== "checking" && a.checking_or_savings !== "savings") throw new HttpError(400, "invalid_parameters", "account.checking_or_savings must be checking or savings.", "account.checking_or_savings");
    const last4 = a.account_number.slice(-4);
    const ea: ExternalAccount = {
      id: id("ea"),
      customer_id: customer,
      account_type: "us",
      currency: "usd",
      account_owner_name: name,
      bank_name: typeof b.bank_name === "string" ? b.bank_name : null,
      last_4: last4,
      active: true,
      account: { last_4: last4, routing_number: a.routing_number, checking_or_savings: a.checking_or_savings },
      created_at: now(),
      updated_at: now(),
      _accountNumber: a.account_number,
    };
    st.externalAccounts.push(ea);
    return { status: 201, body: pub(ea) };
  }

  async function createTransfer(b: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
    const cents = centsString(b.amount);
    if (cents === undefined) throw new HttpError(400, "invalid_parameters", "amount must be a positive decimal string with at most 2 decimals.", "amount");
    if (b.on_behalf_of !== undefined && !st.customers.includes(String(b.on_behalf_of))) throw new HttpError(404, "not_found", `Customer ${String(b.on_behalf_of)} not found.`, "on_behalf_of");
    if (typeof b.on_behalf_of !== "string") throw new HttpError(400, "invalid_parameters", "on_behalf_of is required.", "on_behalf_of");
    const s = b.source as Record<string, unknown> | undefined;
    const d = b.destination as Record<string, unknown> | undefined;
    if (!s || s.payment_rail !== "base" || s.currency !== "usdc") throw new HttpError(400, "invalid_parameters", "This stand-in supports source {payment_rail: base, currency: usdc} only.", "source");
    if (typeof s.from_address !== "string" || !isAddress(s.from_address)) throw new HttpError(400, "invalid_parameters", "source.from_address must be an EVM address.", "source.from_address");
    if (!d || d.payment_rail !== "ach" || d.currency !== "usd") throw new HttpError(400, "invalid_parameters", "This stand-in supports destination {payment_rail: ach, currency: usd} only.", "destination");
    const ea = st.externalAccounts.find((x) => x.id === d.external_account_id);
    if (!ea || ea.customer_id !== b.on_behalf_of) throw new HttpError(400, "invalid_parameters", "destination.external_account_id does not name an external account of this customer.", "destination.external_account_id");
    const r = b.return_instructions as Record<string, unknown> | undefined;
    if (r !== undefined && (typeof r !== "object" || typeof r.address !== "string" || !isAddress(r.address))) throw new HttpError(400, "invalid_parameters", "return_instructions.address must be an EVM address.", "return_instructions.address");
    const depositKey = generatePrivateKey();
    const to = privateKeyToAccount(depositKey).address;
    // Gas for the refund this address may have to send.
    await testClient.setBalance({ address: to, value: 10n ** 18n });
    const amount = `${cents / 100n}.${String(cents % 100n).padStart(2, "0")}`;
    const from = getAddress(s.from_address);
    const t: Transfer = {
      id: id("transfer"),
      state: "awaiting_funds",
      on_behalf_of: b.on_behalf_of,
      amount,
      developer_fee: "0.0",
      currency: "usd",
      source: { payment_rail: "base", currency: "usdc", from_address: from },
      destination: { payment_rail: "ach", currency: "usd", external_account_id: ea.id },
      source_deposit_instructions: { payment_rail: "base", amount, currency: "usdc", from_address: from, to_address: to },
      return_instructions: r ? { address: getAddress(r.address as string) } : null,
      receipt: { initial_amount: amount, developer_fee: "0.0", exchange_fee: "0.0", final_amount: amount },
      created_at: now(),
      updated_at: now(),
      _depositKey: depositKey,
      _receivedMicros: "0",
      _nextAt: 0,
    };
    st.transfers.push(t);
    return { status: 201, body: pub(t) };
  }

  /**
   * `GET /v0/transfers`, as Bridge documents it ("Fetching Transfers"): newest first by creation time,
   * `limit` 1–100 (default 10), and at most one of `starting_after` / `ending_before` (a transfer id) or
   * `updated_after_ms` / `updated_before_ms` (a timestamp in ms, the transfers updated strictly after or
   * before it).
   */
  function listTransfers(q: URLSearchParams): { status: number; body: unknown } {
    const limitText = q.get("limit") ?? "10";
    const limit = /^\d{1,3}$/.test(limitText) ? Number(limitText) : NaN;
    if (!(limit >= 1 && limit <= LIST_LIMIT_MAX)) throw new HttpError(400, "invalid_parameters", `limit must be an integer from 1 to ${LIST_LIMIT_MAX}.`, "limit");
    const given = ["starting_after", "ending_before", "updated_after_ms", "updated_before_ms"].filter((k) => q.has(k));
    if (given.length > 1) throw new HttpError(400, "invalid_parameters", `${given.join(", ")} are mutually exclusive; specify at most one of them.`, given[1]);
    const ms = (k: string) => {
      const v = q.get(k)!;
      if (!/^\d{1,15}$/.test(v)) throw new HttpError(400, "invalid_parameters", `${k} must be an integer timestamp in milliseconds.`, k);
      return Number(v);
    };
    let list = [...st.transfers].reverse(); // newest first by creation
    const by = given[0];
    if (by === "updated_after_ms") {
      const after = ms(by);
      list = list.filter((t) => Date.parse(t.updated_at) > after);
    } else if (by === "updated_before_ms") {
      const before = ms(by);
      list = list.filter((t) => Date.parse(t.updated_at) < before);
    } else if (by === "starting_after" || by === "ending_before") {
      const at = list.findIndex((t) => t.id === q.get(by));
      if (at < 0) throw new HttpError(400, "invalid_parameters", `${by} does not name a transfer.`, by);
      list = by === "starting_after" ? list.slice(at + 1) : list.slice(Math.max(0, at - limit), at);
    }
    const data = list.slice(0, limit).map((t) => pub(t));
    return { status: 200, body: { count: data.length, data } };
  }

  async function route(req: IncomingMessage): Promise<{ status: number; body: unknown }> {
    const url = new URL(req.url ?? "/", "http://x");
    const method = req.method ?? "GET";
    const fault = faults.find((f) => f.method === method && url.pathname.startsWith(f.pathPrefix) && f.times > 0);
    if (fault) {
      fault.times--;
      throw new HttpError(fault.status, fault.status === 429 ? "rate_limited" : "internal_error", fault.status === 429 ? "Too many requests." : "Something went wrong.");
    }
    if (req.headers["api-key"] !== apiKey) throw new HttpError(401, "unauthorized", "Missing or invalid Api-Key header.");
    const parts = url.pathname.split("/").filter(Boolean);
    if (parts[0] !== "v0") throw new HttpError(404, "not_found", "No such route.");
    if (method === "POST") {
      const key = req.headers["idempotency-key"];
      if (typeof key !== "string" || key.length === 0 || key.length > 256) throw new HttpError(400, "missing_idempotency_key", "POST requests need an Idempotency-Key header.");
      const body = await readJson(req);
      // Bridge: within 24 hours a repeated key returns the original response, with no side effect.
      const seen = st.idempotency[key];
      if (seen) return seen;
      let out: { status: number; body: unknown };
      if (parts[1] === "customers" && parts[3] === "external_accounts" && parts.length === 4) out = createExternalAccount(parts[2]!, body);
      else if (parts[1] === "transfers" && parts.length === 2) out = await createTransfer(body);
      else throw new HttpError(404, "not_found", "No such route.");
      st.idempotency[key] = out;
      save();
      if (parts[1] === "transfers") await held;
      return out;
    }
    if (method === "GET" && parts[1] === "transfers" && parts.length === 2) return listTransfers(url.searchParams);
    if (method === "GET" && parts[1] === "transfers" && parts.length === 3) {
      const t = st.transfers.find((x) => x.id === parts[2]);
      if (!t) throw new HttpError(404, "not_found", `Transfer ${parts[2]} not found.`);
      if (t.state === "payment_processed") t._seenProcessed = true;
      return { status: 200, body: pub(t) };
    }
    if (method === "DELETE" && parts[1] === "transfers" && parts.length === 3) {
      const t = st.transfers.find((x) => x.id === parts[2]);
      if (!t) throw new HttpError(404, "not_found", `Transfer ${parts[2]} not found.`);
      if (t.state !== "awaiting_funds") throw new HttpError(400, "invalid_state", `A transfer in state ${t.state} cannot be canceled.`);
      moveTo(t, "canceled");
      return { status: 200, body: pub(t) };
    }
    // The customer (Bridge: GET /v0/customers/{customerID}); an operator's tools read it to check the key.
    if (method === "GET" && parts[1] === "customers" && parts.length === 3) {
      if (!st.customers.includes(parts[2]!)) throw new HttpError(404, "not_found", `Customer ${parts[2]} not found.`);
      return { status: 200, body: { id: parts[2], type: "business", status: "active" } };
    }
    if (method === "GET" && parts[1] === "customers" && parts[3] === "external_accounts" && parts.length === 5) {
      const ea = st.externalAccounts.find((x) => x.id === parts[4] && x.customer_id === parts[2]);
      if (!ea) throw new HttpError(404, "not_found", `External account ${parts[4]} not found.`);
      return { status: 200, body: pub(ea) };
    }
    throw new HttpError(404, "not_found", "No such route.");
  }

  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    route(req).then(
      (r) => {
        res.writeHead(r.status, { "content-type": "application/json" });
        res.end(JSON.stringify(r.body));
      },
      (err: unknown) => {
        const e = err instanceof HttpError ? err : new HttpError(500, "internal_error", "Something went wrong.");
        res.writeHead(e.status, { "content-type": "application/json", ...(e.status === 429 ? { "retry-after": "0" } : {}) });
        res.end(JSON.stringify({ code: e.code, message: e.message, ...(e.key ? { source: { location: "body", key: e.key } } : {}) }));
      },
    );
  });
  await new Promise<void>((r) => server.listen(o.port ?? 0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  // ----------------------------------------------------------------------------- chain and states

  async function refund(t: Transfer, reason: string) {
    const to = t.return_instructions?.address;
    if (!to) {
      moveTo(t, "error", { return_reason: `${reason}; no return address` });
      return;
    }
    const wallet = devWalletClient(chain, t._depositKey);
    const hash = await wallet.writeContract({ address: o.usdcAddress, abi: testUsdcAbi, functionName: "transfer", args: [to, BigInt(t._receivedMicros)] });
    await publicClient.waitForTransactionReceipt({ hash, timeout: RECEIPT_TIMEOUT_MS });
    moveTo(t, "refunded", { refund_tx_hash: hash });
  }

  async function scan() {
    const head = await publicClient.getBlockNumber();
    let from = BigInt(st.scannedBlock) + 1n;
    const open = st.transfers.filter((t) => t.state === "awaiting_funds");
    while (from <= head) {
      const to = from + LOG_RANGE_MAX - 1n < head ? from + LOG_RANGE_MAX - 1n : head;
      if (open.length > 0) {
        const logs = await publicClient.getLogs({ address: o.usdcAddress, event: usdcTransfer, args: { to: open.map((t) => t.source_deposit_instructions.to_address) }, fromBlock: from, toBlock: to });
        for (const l of logs) {
          const t = open.find((x) => x.source_deposit_instructions.to_address.toLowerCase() === l.args.to!.toLowerCase());
          // Bridge matches a deposit to its transfer by sender and amount.
          if (!t || t.state !== "awaiting_funds" || l.args.from!.toLowerCase() !== t.source.from_address.toLowerCase()) continue;
          t._receivedMicros = String(BigInt(t._receivedMicros) + l.args.value!);
          const wanted = centsString(t.amount)! * 10_000n;
          if (BigInt(t._receivedMicros) >= wanted) moveTo(t, "funds_received", { source_tx_hash: l.transactionHash });
        }
      }
      st.scannedBlock = String(to);
      from = to + 1n;
    }
    save();
  }

  async function step(t: Transfer) {
    if (Date.now() < t._nextAt) return;
    const account = st.externalAccounts.find((x) => x.id === t.destination.external_account_id)?._accountNumber;
    if (t.state === "funds_received") {
      if (account === BRIDGE_ERROR_ACCOUNT) moveTo(t, "error", { return_reason: "The payout could not be processed and needs review." });
      else moveTo(t, "payment_submitted");
    } else if (t.state === "payment_submitted") moveTo(t, "payment_processed");
    else if (t.state === "payment_processed" && account === BRIDGE_RETURN_ACCOUNT && t._seenProcessed) moveTo(t, "returned", { return_reason: "R01: Insufficient funds" });
    else if (t.state === "returned" || t.state === "error") await refund(t, t.receipt.return_reason ?? t.state);
  }

  async function deliver() {
    if (!webhookUrl) return;
    for (const e of events.filter((x) => Date.now() >= x.nextAt).slice(0, 50)) {
      e.attempts++;
      const ts = Date.now();
      let ok = false;
      try {
        const res = await fetch(webhookUrl, { method: "POST", headers: { "content-type": "application/json", "x-webhook-signature": signBody(e.body, ts) }, body: e.body, signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS) });
        // A replay answer means it was processed before.
        ok = res.ok || res.status === 409;
      } catch {
        ok = false;
      }
      if (ok || e.attempts >= WEBHOOK_ATTEMPTS_MAX) events.splice(events.indexOf(e), 1);
      else e.nextAt = Date.now() + Math.min(5_000, 100 * 2 ** e.attempts);
    }
  }

  let ticking: Promise<void> | undefined;
  async function tick() {
    if (ticking) return ticking;
    ticking = (async () => {
      try {
        await scan();
        if (!paused) for (const t of st.transfers) await step(t);
        await deliver();
      } finally {
        ticking = undefined;
      }
    })();
    return ticking;
  }
  const timer = setInterval(() => void tick().catch(() => undefined), o.tickMs ?? 100);

  return {
    url,
    apiKey,
    customerId,
    webhookPublicKey: keys.publicKeyPem,
    setWebhookUrl(u) {
      webhookUrl = u;
    },
    pause(p) {
      paused = p;
    },
    holdTransferAnswers(h) {
      if (h && !release) held = new Promise((r) => (release = r));
      if (!h && release) {
        release();
        release = undefined;
      }
    },
    dropWebhooks(d) {
      dropping = d;
    },
    returnTransfer(transferId, reason = "R01: Insufficient funds") {
      const t = st.transfers.find((x) => x.id === transferId);
      if (!t) throw new Error(`no transfer ${transferId}`);
      if (t.state !== "payment_processed") throw new Error(`transfer ${transferId} is ${t.state}; only a paid-out transfer can be returned`);
      moveTo(t, "returned", { return_reason: reason });
    },
    injectFault(f) {
      faults.push({ ...f });
    },
    transfers: () => st.transfers.map((t) => pub(t) as never),
    externalAccountCount: () => st.externalAccounts.length,
    signedEvent(transferId, timestampMs = Date.now()) {
      const t = st.transfers.find((x) => x.id === transferId);
      if (!t) throw new Error(`no transfer ${transferId}`);
      const body = eventBody(t);
      return { body, headers: { "content-type": "application/json", "x-webhook-signature": signBody(body, timestampMs) } };
    },
    sign: signBody,
    tick,
    async stop() {
      clearInterval(timer);
      release?.();
      await ticking?.catch(() => undefined);
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections();
    },
  };
}

/** The stand-in's RSA key pair, API key and customer id: kept with its state, or fresh. */
function loadKeys(statePath: string | undefined): { privateKeyPem: string; publicKeyPem: string; apiKey: string; customerId: string } {
  if (statePath && existsSync(statePath)) return JSON.parse(readFileSync(statePath, "utf8")).keys;
  const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
  return {
    privateKeyPem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicKeyPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    apiKey: `sk-test-${randomBytes(16).toString("hex")}`,
    customerId: randomBytes(16).toString("hex"),
  };
}
