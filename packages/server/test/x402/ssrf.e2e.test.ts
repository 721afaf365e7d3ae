// SSRF through the real POST /v1/pay with the live-mode x402 settings (https only, public addresses only):
// every URL of the shared attacker list is refused with 400, nothing is signed or held, and loopback
// listeners (127.0.0.1 and ::1, one for http:// URLs and one for https://) record 0 connections. Names an
// attacker controls in DNS are answered by the fixture's resolver (pointing at internal addresses); names
// this machine's own resolver maps to loopback (/etc/hosts, the host name) are tried too.
import dns from "node:dns/promises";
import os from "node:os";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createX402Rail } from "../../src/rails/x402/x402Rail.ts";
import { isPublicAddress } from "../../src/net/ipPolicy.ts";
import { type CountingListener, casesFor, startCountingListener, testLookup } from "../support/ssrfTargets.ts";
import { startHandBuiltTarget } from "./support/handBuiltTarget.ts";
import { type X402World, startX402World } from "./support/x402World.ts";
import { paymentRows } from "../../src/ledger/testing.ts";

const http = await startCountingListener();
const https = await startCountingListener();
/** Names the machine's resolver maps to non-public addresses (e.g. `localhost`'s siblings in /etc/hosts). */
const localNames = await namesResolvingInternally(["vm", "runsc", os.hostname(), "ip6-localhost", "ip6-loopback"]);
const cases = [
  ...casesFor({ http: http.port, https: https.port }, false),
  ...localNames.map((name) => ({ url: `https://${name}:${https.port}/`, expected: "host_not_allowed" as const })),
];

let w: X402World;
beforeAll(async () => {
  w = await startX402World({ fundMicros: 1_000_000n, env: { X402_ALLOW_HTTP: "0", X402_ALLOW_PRIVATE_NETWORKS: "0" } });
  // The same rail the server built, with the fixture's resolver for attacker-controlled names.
  const rails = w.ctx.rails!;
  rails.x402 = createX402Rail({ ctx: w.ctx, chain: rails.chain, relayer: rails.relayer, lookup: testLookup });
});
afterAll(async () => {
  await w?.stop();
  await http.close();
  await https.close();
});

const connections = () => http.connections() + https.connections();

describe("live-mode settings: every attacker URL is refused, nothing dialled", () => {
  test("behavior: the list holds at least 60 distinct URLs, with the machine's own loopback names", () => {
    expect(new Set(cases.map((c) => c.url)).size).toBeGreaterThanOrEqual(60);
    expect(w.ctx.config.x402).toMatchObject({ allowHttp: false, allowPrivateNetworks: false });
  });

  test.each(cases)("error: POST /v1/pay $url → 400", async ({ url, expected }) => {
    const answer = await w.post("/v1/pay", { recipient: url, max_amount_usdc: 1_000_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    // The recipient check refuses what is not an http(s) URL at all; the fetcher refuses the rest.
    expect([expected, "invalid_recipient"]).toContain(answer.body.code);
    expect(connections(), url).toBe(0);
  });

  test.each(cases.filter((_, i) => i % 7 === 0))("error: POST /v1/x402/pay $url → 400", async ({ url, expected }) => {
    const answer = await w.post("/v1/x402/pay", { url, max_amount_usdc: 1_000_000 });
    expect(answer.status, JSON.stringify(answer.body)).toBe(400);
    expect(expected).toBe(answer.body.code);
    expect(connections(), url).toBe(0);
  });

  test("behavior: after the whole list, 0 connections, 0 signatures, no payment, balance intact", async () => {
    await new Promise((r) => setTimeout(r, 100));
    expect(connections()).toBe(0);
    expect(w.signatures.count()).toBe(0);
    expect(await paymentRows(w.ctx.ledger)).toEqual([]);
    expect((await w.get("/v1/balance")).body).toMatchObject({ available: 1_000_000, total_spent: 0 });
  });
});

describe("redirects are never followed", () => {
  let internal: CountingListener;
  beforeAll(async () => {
    internal = await startCountingListener();
  });
  afterAll(async () => {
    await internal.close();
  });

  test("behavior: a 3xx from the target comes back as its reply; its Location is never dialled", async () => {
    // Loopback targets are allowed here (sandbox settings) so a redirector can be reached at all.
    const rails = w.ctx.rails!;
    const live = rails.x402;
    const sandboxCtx = { ...w.ctx, config: { ...w.ctx.config, x402: { ...w.ctx.config.x402, allowHttp: true, allowPrivateNetworks: true } } };
    rails.x402 = createX402Rail({ ctx: sandboxCtx, chain: rails.chain, relayer: rails.relayer });
    const redirector = await startHandBuiltTarget(() => ({ status: 302, headers: { location: `http://127.0.0.1:${internal.port}/latest/meta-data/` } }));
    try {
      const answer = await w.post("/v1/pay", { recipient: `${redirector.url}/go`, max_amount_usdc: 1_000_000 });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ amount_charged: 0, response: { status_code: 302, headers: { location: `http://127.0.0.1:${internal.port}/latest/meta-data/` } } });
      await new Promise((r) => setTimeout(r, 100));
      expect(internal.connections()).toBe(0);
      expect(w.signatures.count()).toBe(0);
    } finally {
      rails.x402 = live;
      await redirector.close();
    }
  });
});

async function namesResolvingInternally(names: string[]): Promise<string[]> {
  const found: string[] = [];
  for (const name of new Set(names)) {
    const addresses = await dns.lookup(name, { all: true }).catch(() => []);
    if (addresses.length > 0 && addresses.some((a) => !isPublicAddress(a.address))) found.push(name);
  }
  return found;
}
