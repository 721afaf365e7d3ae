// The SSRF-safe HTTP fetcher of the x402 rail: the service requests an agent-supplied URL from inside our
// network (and on a 402 pays and retries), so every request is checked before any byte leaves.
//
// What a request goes through, in order, failing with a `SafeFetchError` code (see safeFetchErrors.ts):
// 1. Shape: method GET/POST/PUT/DELETE, body only on POST/PUT/DELETE and at most `maxRequestBodyBytes`,
//    URL at most `maxUrlLength` characters, parsed with WHATWG URL (which also normalises 2130706433,
//    0x7f.1, 127.1, 0177.0.0.1 to 127.0.0.1), scheme https (http only with `allowHttp`), no user:password@.
// 2. Host: an IP literal is checked directly (undici never runs a DNS hook for those). A name is resolved
//    with `lookup` (all addresses) and every address must be public, so one private record in a mixed
//    answer refuses the host. `localhost` and `*.localhost` are refused by name. ipPolicy.ts says what
//    "public" means. `allowPrivateNetworks` skips these checks (sandbox and tests), never the scheme rule.
// 3. Dial: a fresh undici Client per request whose connector dials exactly the address checked in step 2
//    (pinned, so a second DNS answer cannot swap in an internal address), with the original host name as
//    TLS servername and certificate identity, re-checks that address, and refuses any DNS lookup of its own.
//    The Client is destroyed after the response, so no connection outlives the request. `prepare` does
//    steps 1–3 ahead of time for one request (the x402 paid retry dials while the payment is signed and
//    held); its connection is just as fresh, pinned and single-use. Only a request sent with
//    `reuseConnection` (the unpaid first request, which carries no payment) may use a kept-alive connection,
//    kept per origin and checked address, so a new DNS answer never reuses a connection to the old one.
// 4. Never follows redirects: a 3xx is returned as the response and its Location is never dialled.
// 5. One deadline (`timeoutMs`) covers DNS, connect, headers and body; the body is read up to
//    `maxResponseBytes` and the connection torn down beyond it. A request over a kept-alive connection first
//    waits (at most `connectionWaitMs`) for one of its origin's connections to be free, and its deadline for
//    connect, headers and body starts when it has one: waiting behind other requests to the same receiver
//    is not the receiver being slow.
//
// Outgoing headers. The caller's `headers` are the headers of the agent's payment request, meant for the
// target, so they are forwarded, including `Authorization` and `Cookie`: those are the agent's own
// credentials for the target. The service's own incoming `Authorization` never gets here, because callers
// pass only the payment request's `headers` field; as a second line, a value that carries an Agent Wallet
// API token (`aw_live_…`, `aw_test_…`) is refused, since forwarding it would hand the wallet to the target.
// Dropped silently, as a proxy must: hop-by-hop headers (connection and the names it lists, keep-alive,
// proxy-*, te, trailer, transfer-encoding, upgrade, http2-settings), `host` (from the URL), `content-length`
// (recomputed), `expect`, forwarding metadata (forwarded, via, x-forwarded-*, x-real-ip: the caller may not
// speak for our egress address), `user-agent` (always `userAgent`, so merchants can identify us) and
// `accept-encoding` (always `identity`, so the size cap counts real bytes and no decompression bomb exists).
// Refused: the x402 payment headers (`x-payment`, `payment-signature`), which only the payment layer sets,
// through `serviceHeaders` on the paid retry; service headers override caller headers of the same name.
// Every name must be an HTTP token and every value free of control characters (no CR/LF header injection).
//
// Response headers come back with lowercased names; repeated headers are joined with ", " (RFC 9110), except
// `set-cookie`, whose values may contain commas and are joined with "\n", which no header value can contain.

import dns from "node:dns";
import { Buffer } from "node:buffer";
import type { Duplex } from "node:stream";
import { Client, Pool, buildConnector } from "undici";
import { checkAddress, ipLiteralFromHostname } from "./ipPolicy.ts";
import { SafeFetchError } from "./safeFetchErrors.ts";
import { carriesServiceToken } from "../tokenScan.ts";

/** Node's `dns.lookup` with `{ all: true }`; tests inject one that resolves names to loopback. */
export type LookupFunction = (
  hostname: string,
  options: dns.LookupAllOptions,
  callback: (error: NodeJS.ErrnoException | null, addresses: dns.LookupAddress[]) => void,
) => void;

export type SafeFetchOptions = {
  /** Allow http:// targets. Default false: https only. */
  readonly allowHttp?: boolean;
  /** Skip the public-address checks (loopback, private...). Default false; only sandbox and tests set it. */
  readonly allowPrivateNetworks?: boolean;
  /**
   * Non-public targets allowed all the same, as `address:port` of the address dialled (`127.0.0.1:4021`,
   * `[::1]:4021`): the sandbox's own demo merchant and facilitator. Read at each request, so the list may
   * grow after the fetcher is built. Default none.
   */
  readonly allowedTargets?: readonly string[];
  /** One deadline for DNS + connect + response headers + body, in ms. */
  readonly timeoutMs?: number;
  /**
   * Longest wait for a free kept-alive connection (requests sent with `reuseConnection`), in ms; the request's
   * own deadline starts once it has one. Default `timeoutMs`.
   */
  readonly connectionWaitMs?: number;
  /** Largest response body accepted, in bytes; a larger one fails with `response_too_large`. */
  readonly maxResponseBytes?: number;
  /** Largest response head (status line + headers) accepted, in bytes. */
  readonly maxResponseHeaderBytes?: number;
  /** Longest URL accepted, in characters. */
  readonly maxUrlLength?: number;
  /** Largest request body accepted, in UTF-8 bytes. */
  readonly maxRequestBodyBytes?: number;
  /** Most headers a caller may pass (before any are dropped). */
  readonly maxHeaderCount?: number;
  /** Largest total size of the caller's header names and values, in bytes. */
  readonly maxHeaderBytes?: number;
  /** DNS lookup; called as `lookup(hostname, { all: true }, callback)`. Default `dns.lookup`. */
  readonly lookup?: LookupFunction;
  /** The User-Agent sent on every request. */
  readonly userAgent?: string;
};

/** The defaults of every limit, each with why. */
export const SAFE_FETCH_DEFAULTS = {
  allowHttp: false,
  allowPrivateNetworks: false,
  allowedTargets: [] as readonly string[],
  /** Long enough for a slow paid API on another continent, short enough to hold a payment hold briefly. */
  timeoutMs: 10_000,
  /** x402 resources are API responses; 1 MiB is generous and bounds memory per in-flight payment. */
  maxResponseBytes: 1_048_576,
  /** undici's own default; real servers send a few hundred bytes. */
  maxResponseHeaderBytes: 16_384,
  /** The common practical URL limit of browsers, CDNs and servers. */
  maxUrlLength: 2048,
  /** Far above any JSON API call an agent pays for; the proxy is not for bulk uploads. */
  maxRequestBodyBytes: 262_144,
  /** Real clients send a dozen or two. */
  maxHeaderCount: 64,
  /** Most servers refuse request heads beyond 8-16 KiB anyway. */
  maxHeaderBytes: 16_384,
  userAgent: "agentwallet-x402/0.1",
} as const;

export type SafeFetchMethod = "GET" | "POST" | "PUT" | "DELETE";

export type SafeFetchRequest = {
  readonly url: string;
  readonly method: SafeFetchMethod;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
};

export type SafeFetchResponse = {
  readonly status: number;
  /** Lowercased names; see the header of this file for how repeated headers are joined. */
  readonly headers: Record<string, string>;
  /** The body decoded as UTF-8. */
  readonly body: string;
  /** The URL requested, normalised, without fragment (never a redirect target: redirects are not followed). */
  readonly url: string;
};

export type SafeFetchCallOptions = {
  /** Headers the service itself adds (the x402 payment header on the paid retry); they win over the caller's. */
  readonly serviceHeaders?: Readonly<Record<string, string>>;
  /**
   * Send over a kept-alive connection to the same origin and checked address, if one is idle (the x402
   * rail's unpaid first request). Never for a request that carries a payment: that one needs a fresh
   * connection, whose failure to connect proves the payment was never sent.
   */
  readonly reuseConnection?: boolean;
};

export type SafeFetch = {
  (request: SafeFetchRequest, callOptions?: SafeFetchCallOptions): Promise<SafeFetchResponse>;
  /**
   * Checks the URL's host and dials its address now, for one request sent later with `send` (to the same
   * origin): the connection is fresh, used once, and destroyed after that request like any other. `close`
   * drops it unused. Everything `SafeFetch` checks is checked; a failure to dial surfaces from `send`.
   */
  prepare(url: string): PreparedRequest;
};

export type PreparedRequest = {
  send(request: SafeFetchRequest, callOptions?: SafeFetchCallOptions): Promise<SafeFetchResponse>;
  close(): void;
};

type Limits = Required<SafeFetchOptions>;

export function createSafeFetcher(options: SafeFetchOptions = {}): SafeFetch {
  const limits: Limits = {
    ...SAFE_FETCH_DEFAULTS,
    lookup: dns.lookup,
    connectionWaitMs: options.timeoutMs ?? SAFE_FETCH_DEFAULTS.timeoutMs,
    ...definedOnly(options),
  };
  assertLimits(limits);
  const pools = new KeptConnections(limits);
  const fetcher = (request: SafeFetchRequest, callOptions: SafeFetchCallOptions = {}) => safeFetch(limits, request, callOptions, undefined, callOptions.reuseConnection ? pools : undefined);
  return Object.assign(fetcher, { prepare: (url: string) => prepare(limits, url) });
}

async function safeFetch(
  limits: Limits,
  request: SafeFetchRequest,
  callOptions: SafeFetchCallOptions,
  prepared?: Promise<Dialled>,
  kept?: KeptConnections,
): Promise<SafeFetchResponse> {
  const deadline = startDeadline(limits.timeoutMs);
  try {
    const method = checkMethod(request);
    const body = checkBody(request, method, limits);
    const url = parseTarget(request, limits);
    const headers = buildHeaders(request.headers, callOptions.serviceHeaders, limits);
    if (!prepared) {
      const address = await resolveTarget(url, limits, deadline);
      if (kept) return await sendKept(kept, { url, address, method, headers, body, limits }, deadline);
      const x: Exchange = { url, address, method, headers, body, limits, deadline };
      return await exchange(x, freshRoute(x));
    }
    const dialled = await prepared;
    if (dialled.url.origin !== url.origin) throw new Error(`a connection prepared for ${dialled.url.origin} cannot serve ${url.origin}`);
    const x: Exchange = { url, address: dialled.address, method, headers, body, limits, deadline };
    return await exchange(x, freshRoute(x, dialled));
  } finally {
    deadline.clear();
  }
}

/**
 * A request over a kept-alive connection: it waits for one of the origin's connections (bounded), and its
 * deadline restarts then, so the time spent queued behind other requests to the same receiver is not charged
 * to this one. Nothing has been sent while it waits.
 */
async function sendKept(kept: KeptConnections, x: Omit<Exchange, "deadline">, lookupDeadline: Deadline): Promise<SafeFetchResponse> {
  lookupDeadline.clear();
  const slot = await kept.acquire(x);
  const deadline = startDeadline(x.limits.timeoutMs);
  try {
    return await exchange({ ...x, deadline }, slot.route);
  } finally {
    deadline.clear();
    slot.release();
  }
}

/** A connection dialled ahead of its request: the checked address and the socket, or why it failed. */
type Dialled = { url: URL; address: string; socket?: Duplex; error?: unknown };

function prepare(limits: Limits, target: string): PreparedRequest {
  const deadline = startDeadline(limits.timeoutMs);
  let state: "open" | "used" | "closed" = "open";
  const dialled: Promise<Dialled> = (async () => {
    try {
      const url = parseTarget({ url: target, method: "GET" }, limits);
      const address = await resolveTarget(url, limits, deadline);
      const connect = pinnedConnector({ url, address, limits, deadline }, { connected: false });
      // The options undici itself passes for this origin (undici/lib/dispatcher/client.js, connect()).
      const options = { host: url.host, hostname: url.hostname, protocol: url.protocol, port: url.port, servername: null, localAddress: null };
      return await new Promise<Dialled>((resolve) => {
        connect(options as never, (error, socket) => {
          if (state === "closed") socket?.destroy();
          resolve(error ? { url, address, error } : { url, address, socket: socket! });
        });
      });
    } finally {
      deadline.clear();
    }
  })();
  dialled.catch(() => undefined);
  return {
    send(request, callOptions = {}) {
      if (state !== "open") return Promise.reject(new Error(`this prepared request is ${state}`));
      state = "used";
      return safeFetch(limits, request, callOptions, dialled);
    },
    close() {
      if (state !== "open") return;
      state = "closed";
      deadline.clear();
      void dialled.then((d) => d.socket?.destroy(), () => undefined);
    },
  };
}

// --- 1. shape --------------------------------------------------------------------------------------------

const METHODS: ReadonlySet<string> = new Set(["GET", "POST", "PUT", "DELETE"]);

function checkMethod(request: SafeFetchRequest): SafeFetchMethod {
  if (typeof request !== "object" || request === null) throw invalidRequest("The request must be an object.");
  if (typeof request.method !== "string" || !METHODS.has(request.method)) {
    throw invalidRequest("The method must be one of GET, POST, PUT, DELETE.");
  }
  return request.method;
}

function checkBody(request: SafeFetchRequest, method: SafeFetchMethod, limits: Limits): Buffer | null {
  if (request.body === undefined) return null;
  if (typeof request.body !== "string") throw invalidRequest("The request body must be a string.");
  if (method === "GET") throw invalidRequest("A GET request cannot have a body; use POST or PUT.");
  if (carriesServiceToken(request.body)) throw invalidRequest("The request body carries an Agent Wallet API token; it is never sent to payment targets.");
  const bytes = Buffer.from(request.body, "utf8");
  if (bytes.length > limits.maxRequestBodyBytes) {
    throw invalidRequest(
      `The request body is ${bytes.length} bytes; the limit is ${limits.maxRequestBodyBytes} bytes.`,
    );
  }
  return bytes;
}

function parseTarget(request: SafeFetchRequest, limits: Limits): URL {
  if (typeof request.url !== "string") throw new SafeFetchError("url_invalid", "The URL must be a string.");
  if (request.url.length > limits.maxUrlLength) {
    throw new SafeFetchError(
      "url_invalid",
      `The URL is ${request.url.length} characters long; the limit is ${limits.maxUrlLength}.`,
    );
  }
  // Parse errors are not echoed: the URL's query may carry the caller's credentials for the target.
  if (!URL.canParse(request.url)) {
    throw new SafeFetchError("url_invalid", "The URL could not be parsed; send an absolute https:// URL.");
  }
  const url = new URL(request.url);
  const allowed = limits.allowHttp ? ["https:", "http:"] : ["https:"];
  if (!allowed.includes(url.protocol)) {
    throw new SafeFetchError(
      "scheme_not_allowed",
      `The URL scheme '${url.protocol.slice(0, -1)}' is not allowed; use ${allowed.map((s) => `${s}//`).join(" or ")}.`,
    );
  }
  if (url.username !== "" || url.password !== "") {
    throw new SafeFetchError(
      "url_invalid",
      "The URL must not contain credentials (user:password@); send them in a header instead.",
    );
  }
  if (url.hostname === "") throw new SafeFetchError("url_invalid", "The URL has no host.");
  if (carriesServiceToken(request.url)) throw invalidRequest("The URL carries an Agent Wallet API token; it is never sent to payment targets.");
  url.hash = "";
  return url;
}

// --- headers ---------------------------------------------------------------------------------------------

/** Hop-by-hop headers (RFC 9110 §7.6.1): they describe one connection, never the request or the reply. */
export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  "connection",
  "keep-alive",
  "proxy-authenticate",
  "proxy-authorization",
  "proxy-connection",
  "te",
  "trailer",
  "transfer-encoding",
  "upgrade",
  "http2-settings",
]);

// Headers this fetcher owns or that let a caller speak for our egress address; dropped from caller input.
const SET_BY_FETCHER: ReadonlySet<string> = new Set([
  "host",
  "content-length",
  "expect",
  "user-agent",
  "accept-encoding",
  "forwarded",
  "via",
  "x-real-ip",
]);

// Only the payment layer puts these on the wire (x402 v1 and v2).
const PAYMENT_HEADERS: ReadonlySet<string> = new Set(["x-payment", "payment-signature"]);

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

function buildHeaders(
  callerHeaders: SafeFetchRequest["headers"],
  serviceHeaders: SafeFetchCallOptions["serviceHeaders"],
  limits: Limits,
): Record<string, string> {
  const caller = normaliseHeaders(callerHeaders ?? {}, "request", limits);
  const listedByConnection = new Set(
    (caller.get("connection") ?? "")
      .split(",")
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ""),
  );
  // No prototype: a caller header named __proto__ must stay a header, not touch the object.
  const out: Record<string, string> = Object.create(null);
  for (const [name, value] of caller) {
    if (HOP_BY_HOP.has(name) || listedByConnection.has(name)) continue;
    if (SET_BY_FETCHER.has(name) || name.startsWith("x-forwarded-")) continue;
    if (PAYMENT_HEADERS.has(name)) {
      throw invalidRequest(`Header '${name}' is set by the service when it pays; remove it from the request.`);
    }
    if (carriesServiceToken(value)) {
      throw invalidRequest(
        `Header '${name}' carries an Agent Wallet API token; it is never sent to payment targets.`,
      );
    }
    out[name] = value;
  }
  out["user-agent"] = limits.userAgent;
  out["accept-encoding"] = "identity";
  for (const [name, value] of normaliseHeaders(serviceHeaders ?? {}, "service", limits)) {
    // The service's own headers are code, not input: a forbidden one is a bug, so it fails loudly.
    if (HOP_BY_HOP.has(name) || SET_BY_FETCHER.has(name)) {
      throw new TypeError(`serviceHeaders must not set '${name}'`);
    }
    out[name] = value;
  }
  return out;
}

/** Validates names, values, count and size; returns lowercased names. Never echoes a value. */
function normaliseHeaders(
  headers: Readonly<Record<string, string>>,
  source: "request" | "service",
  limits: Limits,
): Map<string, string> {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    throw invalidRequest("The request headers must be an object of strings.");
  }
  const entries = Object.entries(headers);
  if (source === "request" && entries.length > limits.maxHeaderCount) {
    throw invalidRequest(`The request has ${entries.length} headers; the limit is ${limits.maxHeaderCount}.`);
  }
  const out = new Map<string, string>();
  let bytes = 0;
  for (const [name, value] of entries) {
    if (!TOKEN.test(name)) throw invalidRequest("A header name is not a valid HTTP token.");
    if (typeof value !== "string" || !FIELD_VALUE.test(value)) {
      throw invalidRequest(
        `Header '${name}' has an invalid value: it must be a string without control characters such as CR or LF.`,
      );
    }
    const lower = name.toLowerCase();
    if (out.has(lower)) throw invalidRequest(`Header '${lower}' is given more than once.`);
    out.set(lower, value);
    bytes += Buffer.byteLength(name, "latin1") + Buffer.byteLength(value, "latin1");
  }
  if (source === "request" && bytes > limits.maxHeaderBytes) {
    throw invalidRequest(`The request headers total ${bytes} bytes; the limit is ${limits.maxHeaderBytes}.`);
  }
  return out;
}

// --- 2. host ---------------------------------------------------------------------------------------------

async function resolveTarget(url: URL, limits: Limits, deadline: Deadline): Promise<string> {
  const hostname = url.hostname;
  const literal = ipLiteralFromHostname(hostname);
  if (literal !== null) {
    if (!limits.allowPrivateNetworks && !allowedTarget(literal, url, limits)) {
      const verdict = checkAddress(literal);
      if (!verdict.public) {
        throw hostNotAllowed(`The target address ${literal} is not allowed (${verdict.reason}).`);
      }
    }
    return literal;
  }
  if (!limits.allowPrivateNetworks && limits.allowedTargets.length === 0 && isLocalhostName(hostname)) {
    throw hostNotAllowed(`The target host ${hostname} is a local name.`);
  }
  const addresses = await lookupAll(limits.lookup, hostname, deadline, limits.timeoutMs);
  if (!limits.allowPrivateNetworks) {
    for (const address of addresses) {
      const verdict = checkAddress(address);
      if (!verdict.public && !allowedTarget(address, url, limits)) {
        throw hostNotAllowed(`The target host ${hostname} resolves to ${address} (${verdict.reason}).`);
      }
    }
  }
  // Every address passed; dial the first, in the order the resolver gave them.
  return addresses[0]!;
}

/** The dialled address and the URL's port are one of `allowedTargets`. */
function allowedTarget(address: string, url: URL, limits: Limits): boolean {
  if (limits.allowedTargets.length === 0) return false;
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const host = address.includes(":") ? `[${address}]` : address;
  return limits.allowedTargets.includes(`${host}:${port}`);
}

function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, "");
  return name === "localhost" || name.endsWith(".localhost");
}

function lookupAll(lookup: LookupFunction, hostname: string, deadline: Deadline, timeoutMs: number): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const onAbort = (): void => {
      reject(new SafeFetchError("timeout", `The DNS lookup of ${hostname} did not finish within ${timeoutMs} ms.`));
    };
    if (deadline.signal.aborted) return onAbort();
    deadline.signal.addEventListener("abort", onAbort, { once: true });
    const settle = (error: NodeJS.ErrnoException | null, result: unknown): void => {
      deadline.signal.removeEventListener("abort", onAbort);
      if (error !== null) {
        const code = typeof error.code === "string" ? ` (${error.code})` : "";
        reject(new SafeFetchError("dns_failed", `The host name ${hostname} did not resolve${code}.`, { cause: error }));
        return;
      }
      const addresses = addressesOf(result);
      if (addresses.length === 0) {
        reject(new SafeFetchError("dns_failed", `The host name ${hostname} resolved to no address.`));
        return;
      }
      resolve(addresses);
    };
    try {
      lookup(hostname, { all: true }, settle);
    } catch (error) {
      settle(error as NodeJS.ErrnoException, null);
    }
  });
}

/** Accepts both callback shapes of `dns.lookup`, in case an injected lookup ignores `all: true`. */
function addressesOf(result: unknown): string[] {
  if (typeof result === "string") return [result];
  if (!Array.isArray(result)) return [];
  return result
    .map((entry: unknown) =>
      typeof entry === "string" ? entry : (entry as { address?: unknown } | null)?.address,
    )
    .filter((address): address is string => typeof address === "string");
}

// --- 3. dial and exchange --------------------------------------------------------------------------------

type Exchange = {
  readonly url: URL;
  readonly address: string;
  readonly method: SafeFetchMethod;
  readonly headers: Record<string, string>;
  readonly body: Buffer | null;
  readonly limits: Limits;
  readonly deadline: Deadline;
};

/**
 * Where a request goes: a fresh single-use connection (destroyed after the response, and it knows whether
 * it ever connected: before that, nothing was sent), or a kept one from `KeptConnections`.
 */
type Route = { dispatcher: Client | Pool; fresh: boolean; connected(error: unknown, status: number | undefined): boolean };

function dispatcherOptions(limits: Limits) {
  return { headersTimeout: limits.timeoutMs, bodyTimeout: limits.timeoutMs, maxHeaderSize: limits.maxResponseHeaderBytes, pipelining: 1 };
}

function freshRoute(x: Exchange, prepared?: Dialled): Route {
  const dialled = { connected: false };
  const client = new Client(x.url.origin, { ...dispatcherOptions(x.limits), connect: prepared ? handOver(prepared, dialled) : pinnedConnector(x, dialled) });
  return { dispatcher: client, fresh: true, connected: () => dialled.connected };
}

async function exchange(x: Exchange, route: Route): Promise<SafeFetchResponse> {
  let status: number | undefined;
  try {
    const response = await route.dispatcher.request({
      path: x.url.pathname + x.url.search,
      method: x.method,
      headers: x.headers,
      body: x.body,
      signal: x.deadline.signal,
      reset: route.fresh,
    });
    status = response.statusCode;
    const body = await readCapped(response.body, response.headers["content-length"], x, status);
    return {
      status,
      headers: flattenHeaders(response.headers),
      body: new TextDecoder("utf-8").decode(body),
      url: x.url.href,
    };
  } catch (error) {
    throw transportError(error, x, route.connected(error, status), status);
  } finally {
    // A fresh connection is torn down, also mid-body after an over-size or timed-out response; the socket
    // is destroyed at once and the answer does not wait for its close callbacks. A kept one goes back to
    // its pool (undici destroys it itself when a response was cut short).
    if (route.fresh) route.dispatcher.destroy().catch(() => undefined);
  }
}

/**
 * Kept-alive connections for requests that may reuse one, per origin and checked address (so a new DNS
 * answer never reuses a connection to the old address), at most `KEPT_ORIGINS_MAX` origins with
 * `KEPT_CONNECTIONS_PER_ORIGIN` connections each, idle ones closed after `KEPT_IDLE_MS`.
 */
class KeptConnections {
  private readonly pools = new Map<string, { pool: Pool; busy: number; waiting: (() => void)[]; evicted: boolean }>();
  constructor(private readonly limits: Limits) {}

  /**
   * One of the origin's `KEPT_CONNECTIONS_PER_ORIGIN` connections for one request, waiting (first come, first
   * served, at most `connectionWaitMs`) while all are busy; `release` hands it to the next waiting request.
   */
  async acquire(x: Omit<Exchange, "deadline">): Promise<{ route: Route; release(): void }> {
    const entry = this.entry(x);
    if (entry.busy >= KEPT_CONNECTIONS_PER_ORIGIN) {
      await new Promise<void>((resolve, reject) => {
        const wake = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          entry.waiting.splice(entry.waiting.indexOf(wake), 1);
          reject(new SafeFetchError("timeout", `No connection to ${x.url.host} was free within ${this.limits.connectionWaitMs} ms (${KEPT_CONNECTIONS_PER_ORIGIN} were busy); nothing was sent.`, { requestMayHaveBeenSent: false }));
        }, this.limits.connectionWaitMs);
        entry.waiting.push(wake);
      });
    }
    entry.busy++;
    let released = false;
    return {
      route: this.route(entry.pool),
      release: () => {
        if (released) return;
        released = true;
        entry.busy--;
        entry.waiting.shift()?.();
        if (entry.evicted && entry.busy === 0 && entry.waiting.length === 0) entry.pool.close().catch(() => undefined);
      },
    };
  }

  private entry(x: Omit<Exchange, "deadline">) {
    const key = `${x.url.origin} ${x.address}`;
    let entry = this.pools.get(key);
    if (entry) {
      this.pools.delete(key);
    } else {
      const pool = new Pool(x.url.origin, {
        ...dispatcherOptions(this.limits),
        connections: KEPT_CONNECTIONS_PER_ORIGIN,
        // Each connection dials the address checked for the request that opened it: the key's address.
        connect: pinnedConnector({ url: x.url, address: x.address, limits: this.limits, deadline: { remainingMs: () => this.limits.timeoutMs } }, { connected: false }),
        keepAliveTimeout: KEPT_IDLE_MS,
        keepAliveMaxTimeout: KEPT_IDLE_MS,
      });
      entry = { pool, busy: 0, waiting: [], evicted: false };
      if (this.pools.size >= KEPT_ORIGINS_MAX) {
        // The oldest pool closes now if idle, else once its last request (those waiting for it too) is done.
        const [oldest, old] = this.pools.entries().next().value!;
        this.pools.delete(oldest);
        old.evicted = true;
        if (old.busy === 0 && old.waiting.length === 0) old.pool.close().catch(() => undefined);
      }
    }
    this.pools.set(key, entry);
    return entry;
  }

  private route(pool: Pool): Route {
    // Which connection served the request is not tracked: nothing that needs to know whether bytes left is
    // sent this way. The error detail still tells a failed dial from a broken exchange.
    return { dispatcher: pool, fresh: false, connected: (error, status) => !(status === undefined && (error instanceof SafeFetchError || DIAL_CODES.has(errorCode(error)))) };
  }
}

const DIAL_CODES: ReadonlySet<string> = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "UND_ERR_CONNECT_TIMEOUT"]);
const KEPT_ORIGINS_MAX = 64;
const KEPT_CONNECTIONS_PER_ORIGIN = 4;
const KEPT_IDLE_MS = 4_000;

/**
 * Gives undici the connection dialled in advance, once; its failure to dial fails the request unsent.
 * The callback comes on a microtask, as a real dial's would: undici mishandles a synchronous one.
 */
function handOver(prepared: Dialled, dialled: { connected: boolean }): buildConnector.connector {
  let given = false;
  return (_options, callback) =>
    queueMicrotask(() => {
      if (given) return callback(new Error("a prepared request has exactly one connection"), null);
      given = true;
      if (prepared.error !== undefined) return callback(prepared.error as Error, null);
      if (prepared.socket!.destroyed) return callback(new Error("the prepared connection closed before the request was sent"), null);
      dialled.connected = true;
      callback(null, prepared.socket as never);
    });
}

/**
 * Dials exactly `x.address`, whatever host name undici asks for; TLS still verifies the certificate for the
 * URL's host name (undici derives the servername from the origin, which is unchanged).
 */
function pinnedConnector(x: { url: URL; address: string; limits: Limits; deadline: Pick<Deadline, "remainingMs"> }, dialled: { connected: boolean }): buildConnector.connector {
  const connect = buildConnector({
    timeout: Math.max(1, x.deadline.remainingMs()),
    maxCachedSessions: 0,
    // The address is an IP literal, so net never resolves; should that ever change, fail closed.
    lookup: (hostname: string, _options: unknown, callback: (error: Error) => void) => {
      callback(new Error(`unexpected DNS lookup of ${hostname} while dialling a pinned address`));
    },
  } as buildConnector.BuildOptions);
  return (options, callback) => {
    if (!x.limits.allowPrivateNetworks && !allowedTarget(x.address, x.url, x.limits)) {
      const verdict = checkAddress(x.address);
      if (!verdict.public) {
        callback(hostNotAllowed(`The target address ${x.address} is not allowed (${verdict.reason}).`), null);
        return;
      }
    }
    connect({ ...options, hostname: x.address }, (...args) => {
      if (args[0] === null) dialled.connected = true;
      callback(...args);
    });
  };
}

async function readCapped(
  body: AsyncIterable<Buffer> & { destroy(): void },
  contentLength: string | string[] | undefined,
  x: Exchange,
  status: number,
): Promise<Buffer> {
  const cap = x.limits.maxResponseBytes;
  const declared = typeof contentLength === "string" ? Number(contentLength) : NaN;
  if (Number.isFinite(declared) && declared > cap) {
    body.destroy();
    throw tooLarge(x, status, `declares ${declared} bytes`);
  }
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of body) {
    total += chunk.length;
    if (total > cap) {
      body.destroy();
      throw tooLarge(x, status, `is larger than ${cap} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

function flattenHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    // A plain object for callers; a header named __proto__ would reach its prototype, so it is dropped.
    if (value === undefined || name === "__proto__") continue;
    const lower = name.toLowerCase();
    out[lower] = Array.isArray(value) ? value.join(lower === "set-cookie" ? "\n" : ", ") : value;
  }
  return out;
}

// --- errors ----------------------------------------------------------------------------------------------

const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

function transportError(error: unknown, x: Exchange, connected: boolean, status: number | undefined): SafeFetchError {
  const host = x.url.host;
  const options = { requestMayHaveBeenSent: connected, status, cause: error };
  const code = errorCode(error);
  if (x.deadline.expired() || TIMEOUT_CODES.has(code)) {
    const detail = `The request to ${host} did not complete within ${x.limits.timeoutMs} ms.`;
    return new SafeFetchError("timeout", detail, options);
  }
  if (error instanceof SafeFetchError) {
    return new SafeFetchError(error.code, error.message, { ...options, status: error.status ?? status });
  }
  if (code === "UND_ERR_HEADERS_OVERFLOW") {
    return new SafeFetchError(
      "response_too_large",
      `The response headers from ${host} are larger than ${x.limits.maxResponseHeaderBytes} bytes.`,
      options,
    );
  }
  const why = code === "" ? "" : ` (${code})`;
  const detail = connected
    ? `The connection to ${host} failed before the full response arrived${why}.`
    : `Could not connect to ${host}${why}.`;
  return new SafeFetchError("connect_failed", detail, options);
}

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : "";
}

function invalidRequest(detail: string): SafeFetchError {
  return new SafeFetchError("request_invalid", detail);
}

function hostNotAllowed(detail: string): SafeFetchError {
  return new SafeFetchError("host_not_allowed", `${detail} Only public internet addresses can be requested.`);
}

function tooLarge(x: Exchange, status: number, what: string): SafeFetchError {
  return new SafeFetchError(
    "response_too_large",
    `The response body from ${x.url.host} ${what}; the limit is ${x.limits.maxResponseBytes} bytes.`,
    { requestMayHaveBeenSent: true, status },
  );
}

// --- helpers ---------------------------------------------------------------------------------------------

type Deadline = {
  readonly signal: AbortSignal;
  expired(): boolean;
  remainingMs(): number;
  clear(): void;
};

function startDeadline(timeoutMs: number): Deadline {
  const controller = new AbortController();
  const endsAt = Date.now() + timeoutMs;
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  return {
    signal: controller.signal,
    expired: () => controller.signal.aborted,
    remainingMs: () => Math.max(0, endsAt - Date.now()),
    clear: () => clearTimeout(timer),
  };
}

function definedOnly(options: SafeFetchOptions): Partial<Limits> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
}

/** Limits are configuration: a bad one is a deployment bug, so it fails at startup, not per request. */
function assertLimits(limits: Limits): void {
  const counts = [
    "timeoutMs",
    "connectionWaitMs",
    "maxResponseBytes",
    "maxResponseHeaderBytes",
    "maxUrlLength",
    "maxRequestBodyBytes",
    "maxHeaderCount",
    "maxHeaderBytes",
  ] as const;
  for (const name of counts) {
    const value = limits[name];
    if (!Number.isSafeInteger(value) || value <= 0) {
      throw new TypeError(`createSafeFetcher: ${name} must be a positive integer, got ${String(value)}`);
    }
  }
  if (typeof limits.lookup !== "function") throw new TypeError("createSafeFetcher: lookup must be a function");
  if (!FIELD_VALUE.test(limits.userAgent)) throw new TypeError("createSafeFetcher: userAgent has invalid characters");
}
