/**
 * Delivers webhook events to clients' endpoints, at least once, signed per Standard Webhooks.
 *
 * Each pass leases due deliveries (ledger/webhookOutbox.ts) up to the free slots of `maxInFlight`, at
 * most `maxInFlightPerEndpoint` per endpoint (so a receiver that hangs holds that many slots, never all
 * of them, and other endpoints' first attempts go out at once), sends them without waiting for one another, and records each outcome under its lease. A 2xx answer
 * delivers; anything else (an error status, a timeout, a refused address) schedules the next attempt
 * after RETRY_SCHEDULE_MS (about three days in all), then gives up. When a delivery gives up and its
 * endpoint has answered nothing but failures for `disableAfterFailingMs`, the endpoint is disabled and
 * the operator told (a warning in the log; `agentwallet webhooks list` shows it). A process killed
 * mid-delivery leaves its lease to expire (`leaseMs`, longer than a request may take); another pass
 * then sends the attempt again, with the same `webhook-id`.
 *
 * Requests go through the SSRF-safe fetcher: https and public addresses only, except that the sandbox
 * also delivers over http to a loopback receiver. Time comes from the injected clock, so tests step it.
 */
import type { Logger } from "pino";
import type { Clock } from "../ids.ts";
import type { TransactionReadStore, WebhookStore } from "../ledger/ports.ts";
import { createCallBatcher } from "../ledger/batching.ts";
import type { AttemptOutcome, ClaimedDelivery } from "../ledger/webhookOutbox.ts";
import { checkAddress, ipLiteralFromHostname } from "../net/ipPolicy.ts";
import { type SafeFetch, createSafeFetcher } from "../net/safeFetch.ts";
import { isSafeFetchError } from "../net/safeFetchErrors.ts";
import { renderWebhookEvent } from "../services/webhooks/renderEvent.ts";
import { openSecret, signWebhook } from "../services/webhooks/secrets.ts";

const SECOND = 1_000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;
/**
 * The wait before each retry (the first attempt is at once): 10 attempts over about 2.6 days, so an
 * endpoint down for a weekend still gets every event (Standard Webhooks' suggested series, extended).
 */
export const RETRY_SCHEDULE_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR] as const;
/** Receivers answer with a status; their bodies are not read beyond this. */
const RESPONSE_BYTES_MAX = 65_536;

export type WebhookDelivererOptions = {
  /** This process, in leases. */
  owner: string;
  clock: Clock;
  logger: Logger;
  mode: "sandbox" | "live";
  /** Private-network receivers allowed by name (`address:port`, PRIVATE_TARGETS), in live mode too. */
  privateTargets?: readonly string[];
  /** Opens endpoints' secrets (masterKeys.ts `loadWebhookSecretKey`). */
  secretKey: Uint8Array;
  /** Requests under way at once in this process. */
  maxInFlight: number;
  /** Deliveries to one endpoint under way at once (leases of every process on the database count). */
  maxInFlightPerEndpoint: number;
  /**
   * One attempt's deadline (DNS, then connect and answer from when one of the receiver's kept connections
   * is free); the wait for a free connection is bounded by as much again.
   */
  timeoutMs: number;
  /** How long a claimed attempt is this process's (more than the wait and the deadline); past it another process sends it again. */
  leaseMs: number;
  /** An endpoint failing this long when one of its deliveries gives up is disabled. */
  disableAfterFailingMs: number;
  /** Called when half the slots are free again, so the loop can fill them at once. */
  onSlotFree?: () => void;
};

export type WebhookDeliverer = {
  /** Claims and starts due deliveries up to the free slots; resolves when they are started. */
  tick(): Promise<number>;
  /** Resolves when every request started has been recorded. */
  drain(): Promise<void>;
  inFlight(): number;
};

/** Outcomes recorded in one write at most (the rest wait for the next). */
const OUTCOMES_PER_WRITE_MAX = 64;
/** Fetchers kept for reuse of their connections, one per set of allowed targets (sandbox: per loopback port). */
const FETCHERS_MAX = 64;

export function createWebhookDeliverer(ledger: { webhooks: WebhookStore; transactions: TransactionReadStore }, o: WebhookDelivererOptions): WebhookDeliverer {
  const running = new Set<Promise<void>>();
  const iso = (ms: number) => new Date(ms).toISOString();
  // Outcomes finished together share one write (on SQLite, one commit): the delivery's cost is its request.
  const record = createCallBatcher<"outcomes", AttemptOutcome, { disabled: boolean }>((_, outcomes) => ledger.webhooks.recordOutcomes(o.owner, outcomes), OUTCOMES_PER_WRITE_MAX);
  const fetchers = new Map<string, SafeFetch>();

  async function tick(): Promise<number> {
    const free = o.maxInFlight - running.size;
    if (free <= 0) return 0;
    const now = o.clock().getTime();
    const claimed = await ledger.webhooks.claimDue(o.owner, iso(now), iso(now + o.leaseMs), free, o.maxInFlightPerEndpoint);
    const bodies = await payloadsOf(claimed);
    for (const d of claimed) {
      const p: Promise<void> = attempt(d, bodies.get(d.event_id))
        .catch((err) => o.logger.error({ err, event_id: d.event_id, endpoint_id: d.endpoint_id }, "webhook delivery could not be recorded; its lease expires and it is sent again"))
        .finally(() => {
          running.delete(p);
          // Refill once half the slots are free: a claim per finished request would cost a write each.
          if (running.size <= o.maxInFlight / 2) o.onSlotFree?.();
        });
      running.add(p);
    }
    return claimed.length;
  }

  /** Each claimed event's body: stored, or rendered now and stored (all in one write). */
  async function payloadsOf(claimed: ClaimedDelivery[]): Promise<Map<string, string | Error>> {
    const bodies = new Map<string, string | Error>();
    const rendered: { eventId: string; payload: string }[] = [];
    for (const d of claimed) {
      if (bodies.has(d.event_id)) continue;
      if (d.payload !== null) bodies.set(d.event_id, d.payload);
      else {
        try {
          const payload = await renderWebhookEvent(ledger.transactions, d);
          bodies.set(d.event_id, payload);
          rendered.push({ eventId: d.event_id, payload });
        } catch (err) {
          bodies.set(d.event_id, err as Error);
        }
      }
    }
    for (const [id, payload] of await ledger.webhooks.storePayloads(rendered)) bodies.set(id, payload);
    return bodies;
  }

  async function attempt(d: ClaimedDelivery, body: string | Error | undefined): Promise<void> {
    const outcome = await send(d, body);
    const at = o.clock().getTime();
    const base = { eventId: d.event_id, endpointId: d.endpoint_id, at: iso(at), status: outcome.status };
    if (outcome.error === null) return void (await record("outcomes", { ...base, delivered: true }));
    const wait = RETRY_SCHEDULE_MS[d.attempts - 1];
    const r = await record("outcomes", {
      ...base,
      delivered: false,
      error: outcome.error,
      nextAttemptAt: wait === undefined ? null : iso(at + wait),
      disableIfFailingSince: wait === undefined ? iso(at - o.disableAfterFailingMs) : undefined,
    });
    if (wait === undefined) {
      o.logger.warn({ event_id: d.event_id, endpoint_id: d.endpoint_id, attempts: d.attempts, last_error: outcome.error }, `webhook ${d.type} to endpoint ${d.endpoint_id} failed ${d.attempts} times; giving up on it`);
    }
    if (r.disabled) {
      o.logger.warn(
        { endpoint_id: d.endpoint_id, project_id: d.project_id, host: hostOf(d.url) },
        `webhook endpoint ${d.endpoint_id} disabled: every delivery failed for ${Math.round(o.disableAfterFailingMs / HOUR)} h or more. Fix the receiver, then \`agentwallet webhooks enable ${d.endpoint_id}\` sends what is pending.`,
      );
    }
  }

  /** One signed POST; its status, and an error unless it delivered. */
  async function send(d: ClaimedDelivery, body: string | Error | undefined): Promise<{ status: number | null; error: string | null }> {
    try {
      // Impossible states (an event naming no transaction, a secret this key cannot open) are logged, and retried like a failure.
      if (body === undefined || body instanceof Error) throw body ?? new Error(`no payload for ${d.event_id}`);
      const secret = openSecret(o.secretKey, d.endpoint_id, d.secret_box);
      const headers = { "content-type": "application/json", ...signWebhook(secret, d.event_id, Math.floor(o.clock().getTime() / 1000), body) };
      const res = await fetcherFor(d.url)({ url: d.url, method: "POST", headers, body }, { reuseConnection: true });
      return res.status >= 200 && res.status < 300 ? { status: res.status, error: null } : { status: res.status, error: `answered ${res.status}` };
    } catch (err) {
      if (isSafeFetchError(err)) {
        // A 2xx whose body was too large still delivered.
        const ok = err.status !== undefined && err.status >= 200 && err.status < 300;
        return { status: err.status ?? null, error: ok ? null : `${err.code}: ${err.message}` };
      }
      o.logger.error({ err, event_id: d.event_id, endpoint_id: d.endpoint_id }, "webhook delivery failed before sending");
      return { status: null, error: `not sent: ${(err as Error).message}` };
    }
  }

  /**
   * The fetcher for one URL: https and public addresses; in the sandbox also http, and a loopback
   * receiver (allowed by its address and port, as the sandbox allows its own demo merchant). Kept, so
   * deliveries to one receiver reuse their connections.
   */
  function fetcherFor(url: string): SafeFetch {
    const allowedTargets = [...(o.mode === "sandbox" ? loopbackTargets(url) : []), ...(o.privateTargets ?? [])];
    const key = allowedTargets.join(",");
    let f = fetchers.get(key);
    if (!f) {
      if (fetchers.size >= FETCHERS_MAX) fetchers.clear();
      f = createSafeFetcher({ allowHttp: o.mode === "sandbox", allowedTargets, timeoutMs: o.timeoutMs, connectionWaitMs: o.timeoutMs, maxResponseBytes: RESPONSE_BYTES_MAX, userAgent: "agentwallet-webhooks/0.1" });
      fetchers.set(key, f);
    }
    return f;
  }

  return {
    tick,
    async drain() {
      while (running.size) await Promise.all([...running]);
    },
    inFlight: () => running.size,
  };
}

/** `address:port` of a loopback URL's receiver, as the fetcher's `allowedTargets` names them. */
function loopbackTargets(raw: string): string[] {
  const url = new URL(raw);
  const port = url.port || (url.protocol === "https:" ? "443" : "80");
  const host = url.hostname.toLowerCase();
  const ip = ipLiteralFromHostname(host);
  if (ip) {
    const v = checkAddress(ip);
    return !v.public && v.reason === "loopback" ? [`${ip.includes(":") ? `[${ip}]` : ip}:${port}`] : [];
  }
  return host === "localhost" || host.endsWith(".localhost") ? [`127.0.0.1:${port}`, `[::1]:${port}`] : [];
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "?";
  }
}
