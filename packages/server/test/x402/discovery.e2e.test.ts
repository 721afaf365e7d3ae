// GET /v1/x402/resources passes through to a facilitator's Bazaar catalogue (x402's bazaar extension:
// /discovery/search with a query, /discovery/resources without), here the sandbox's own facilitator, which
// lists the demo merchant. Catalogue prices come back as hints; the quote of the listed URL asks the
// merchant itself. Nothing here touches the ledger, so one database suffices.
import { afterAll, beforeAll, expect, test } from "vitest";
import { type TestServer, startTestServer } from "../../src/testing/harness.ts";

let s: TestServer;
const call = async (method: "GET" | "POST", path: string, body?: unknown, token = s.token) => {
  const res = await fetch(`${s.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) }, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
};

beforeAll(async () => {
  s = await startTestServer({ x402Demo: true, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
});
afterAll(async () => {
  await s?.stop();
});

test("behavior: a search finds the catalogued resource, its price marked as a hint, and the quote asks the merchant itself", async () => {
  const demo = s.server.x402Demo!;
  const found = await call("GET", "/v1/x402/resources?query=sandbox%20demo&limit=5");
  expect(found.status, JSON.stringify(found.body)).toBe(200);
  expect(found.body).toMatchObject({ prices_are_hints: true, partial_results: false });
  const resources = found.body.resources as { resource: string; price_hint: { amount_usdc: number; network: string } }[];
  expect(resources).toEqual([expect.objectContaining({ resource: demo.paidUrl, type: "http", description: "Agent Wallet sandbox demo resource", price_hint: expect.objectContaining({ amount_usdc: demo.priceMicros, network: "eip155:8453" }) })]);

  const quote = await call("POST", "/v1/quote", { recipient: resources[0]!.resource });
  expect(quote.status, JSON.stringify(quote.body)).toBe(200);
  expect(quote.body.amount_usdc).toBe(resources[0]!.price_hint.amount_usdc);
});

test("behavior: without a query the catalogue is listed by page; a search that matches nothing is an empty list", async () => {
  const listed = await call("GET", "/v1/x402/resources?limit=10&offset=0");
  expect(listed.status).toBe(200);
  expect(listed.body.pagination).toEqual({ limit: 10, offset: 0, total: 1, cursor: null });
  expect((listed.body.resources as unknown[]).length).toBe(1);
  const none = await call("GET", "/v1/x402/resources?query=nothing-like-this");
  expect([none.status, none.body.resources]).toEqual([200, []]);
});

test("error: a token without the x402 permission is refused; a limit out of bounds is a 400", async () => {
  const reader = await s.createToken(["read"]);
  expect((await call("GET", "/v1/x402/resources?query=demo", undefined, reader)).status).toBe(403);
  expect((await call("POST", "/v1/quote", { recipient: s.server.x402Demo!.paidUrl }, reader)).status).toBe(403);
  const bad = await call("GET", "/v1/x402/resources?limit=1000");
  expect([bad.status, bad.body.code]).toEqual([400, "invalid_request"]);
});
