/**
 * `GET /v1/x402/resources`: the configured facilitator's Bazaar catalogue (x402's bazaar extension), passed
 * through: `GET {X402_DISCOVERY_URL}/discovery/search?query=…` with a query, `/discovery/resources` without.
 * Each entry keeps its payment requirements as listed and gains a price hint (the cheapest requirement in
 * our USDC on our network): a catalogue goes stale, so the answer says its prices are hints and the quote
 * (POST /v1/quote) is what asks the resource itself. The facilitator is the operator's own setting, not a
 * caller's URL, so it is fetched directly (bounded in time and size), not through the targets' fetcher.
 */
import type { DiscoveryResponse } from "@agentwallet/api";
import { unavailable, upstream } from "../domain/errors.ts";

export type DiscoveryContext = { config: { x402: { discoveryUrl?: string; timeoutMs: number; maxResponseBytes: number } }; rails?: { chain: { client: { usdcAddress: string; settings: { chainId: number } } } } | undefined };

export type DiscoveryParams = { query?: string; limit?: number; offset?: number; cursor?: string };

/** A catalogue page lists at most this many entries back (the facilitator may send more). */
const RESOURCES_MAX = 100;
/** At most this many requirements of one entry are read for its price hint. */
const ACCEPTS_READ_MAX = 16;

export async function discoverResources(ctx: DiscoveryContext, params: DiscoveryParams): Promise<DiscoveryResponse> {
  const base = ctx.config.x402.discoveryUrl;
  if (!base) throw unavailable("discovery_unavailable", "No facilitator catalogue is configured on this deployment (X402_DISCOVERY_URL). Ask the operator, or quote a URL you know with POST /v1/quote.");
  const search = params.query !== undefined && params.query.trim() !== "";
  const q = new URLSearchParams();
  if (search) q.set("query", params.query!.trim());
  if (params.limit !== undefined) q.set("limit", String(params.limit));
  if (!search && params.offset !== undefined) q.set("offset", String(params.offset));
  if (search && params.cursor !== undefined) q.set("cursor", params.cursor);
  const url = `${base.replace(/\/+$/, "")}/discovery/${search ? "search" : "resources"}?${q}`;
  const body = await fetchJson(url, ctx.config.x402.timeoutMs, ctx.config.x402.maxResponseBytes);
  const items = (search ? body.resources : body.items) as unknown;
  if (!Array.isArray(items)) throw upstream("discovery_failed", `The facilitator's catalogue answered without ${search ? "resources" : "items"}; it may not serve x402's bazaar discovery.`);
  const p = (body.pagination ?? {}) as Record<string, unknown>;
  const num = (v: unknown) => (typeof v === "number" && Number.isInteger(v) ? v : null);
  return {
    resources: items.slice(0, RESOURCES_MAX).filter(isObject).map((r) => entryOf(ctx, r)),
    prices_are_hints: true,
    partial_results: body.partialResults === true,
    pagination: { limit: num(p.limit), offset: num(p.offset), total: num(p.total), cursor: typeof p.cursor === "string" ? p.cursor : null },
  };
}

function entryOf(ctx: DiscoveryContext, r: Record<string, unknown>): DiscoveryResponse["resources"][number] {
  const accepts = (Array.isArray(r.accepts) ? r.accepts : []).slice(0, ACCEPTS_READ_MAX).filter(isObject);
  const chain = ctx.rails?.chain.client;
  const network = chain ? `eip155:${chain.settings.chainId}` : undefined;
  // v2 names the price `amount`, v1 `maxAmountRequired`; only requirements in our USDC on our chain hint a price we could pay.
  const payable = accepts
    .map((a) => ({ a, amount: String(a.amount ?? a.maxAmountRequired ?? "") }))
    .filter(({ a, amount }) => /^[1-9][0-9]{0,15}$/.test(amount) && (!chain || (a.network === network && String(a.asset).toLowerCase() === chain.usdcAddress.toLowerCase())));
  const cheapest = payable.reduce<(typeof payable)[number] | undefined>((m, x) => (!m || Number(x.amount) < Number(m.amount) ? x : m), undefined);
  return {
    resource: String(r.resource ?? ""),
    type: String(r.type ?? "http"),
    description: typeof r.description === "string" ? r.description : null,
    last_updated: typeof r.lastUpdated === "string" ? r.lastUpdated : null,
    price_hint: { amount_usdc: cheapest ? Number(cheapest.amount) : null, network: cheapest ? String(cheapest.a.network) : null, pay_to: cheapest ? String(cheapest.a.payTo) : null },
    accepts,
  };
}

async function fetchJson(url: string, timeoutMs: number, maxBytes: number): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const res = await fetch(url, { headers: { accept: "application/json" }, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
    if (!res.ok) {
      await res.body?.cancel();
      throw upstream("discovery_failed", `The facilitator's catalogue answered ${res.status}.`);
    }
    text = await readBounded(res, maxBytes);
  } catch (err) {
    if ((err as { code?: string }).code === "discovery_failed") throw err;
    throw upstream("discovery_failed", `The facilitator's catalogue could not be read (${(err as Error).name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : "connection failed"}).`);
  }
  try {
    const body = JSON.parse(text) as unknown;
    if (isObject(body)) return body;
  } catch {
    // fall through
  }
  throw upstream("discovery_failed", "The facilitator's catalogue did not answer a JSON object.");
}

/** The body as text, refused once it passes `maxBytes` (read no further). */
async function readBounded(res: Response, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > maxBytes) throw upstream("discovery_failed", `The facilitator's catalogue answered more than ${maxBytes} bytes.`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
