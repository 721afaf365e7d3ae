/**
 * TRUST_PROXY: behind the TLS proxy the README supports, the client's address is the one the trusted proxy
 * reports, so one client's failed sign-ins lock out that client only; from any other peer the forwarding
 * headers are the peer's own claims and change nothing. Real requests through `app.inject` from the proxy's
 * address and from others.
 */
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { ConfigError, loadConfig } from "../../src/config.ts";
import { type TestContext, buildApp, createTestContext, projectWithToken } from "../support/context.ts";

const PROXY = "10.0.0.7";
const ATTEMPTS_PER_MINUTE = 20;

describe("TRUST_PROXY is validated at start", () => {
  const trust = (value: string | undefined) => loadConfig({ AGENTWALLET_DATA_DIR: "/nonexistent", ...(value === undefined ? {} : { TRUST_PROXY: value }) }).trustProxy;

  test("default: off, and the words for off", () => {
    expect(trust(undefined)).toBe(false);
    expect(trust("")).toBe(false);
    expect(trust("false")).toBe(false);
    expect(trust("0")).toBe(false);
  });

  test("behavior: a list of addresses, CIDR ranges and proxy-addr's names; or a hop count", () => {
    expect(trust("10.0.0.7, 192.168.0.0/16 ,::1,fd00::/8,loopback")).toEqual(["10.0.0.7", "192.168.0.0/16", "::1", "fd00::/8", "loopback"]);
    expect(trust("2")).toBe(2);
  });

  test.each([
    ["true", /trusts every peer/],
    ["proxy.internal", /"proxy\.internal" is not an IP address/],
    ["10.0.0.0/33", /"10\.0\.0\.0\/33".*prefix/],
    ["10.0.0.1,,10.0.0.2", /empty entry/],
    ["-1", /not an IP address/],
    ["1000", /hop count.*at most/],
  ])("error: TRUST_PROXY=%s is refused with a clear message", (value, message) => {
    expect(() => trust(value)).toThrow(ConfigError);
    expect(() => trust(value)).toThrow(message);
  });
});

describe("behind a trusted proxy, limits, logs and cookies follow the client the proxy names", () => {
  let t: TestContext;
  let app: FastifyInstance;
  let token: string;
  beforeAll(async () => {
    t = await createTestContext("sqlite", { env: { TRUST_PROXY: `${PROXY},127.0.0.1` } });
    app = buildApp(t.ctx);
    ({ token } = await projectWithToken(t.ctx));
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  const signIn = (from: string, headers: Record<string, string>, secret = "aw_test_wrong") =>
    app.inject({
      method: "POST",
      url: "/console/signin",
      remoteAddress: from,
      payload: new URLSearchParams({ kind: "token", secret }).toString(),
      headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    });

  test("behavior: one client's failed sign-ins through the proxy lock out that client only", async () => {
    for (let i = 0; i < ATTEMPTS_PER_MINUTE; i++) expect((await signIn(PROXY, { "x-forwarded-for": "203.0.113.5" })).statusCode).toBe(401);
    expect((await signIn(PROXY, { "x-forwarded-for": "203.0.113.5" })).statusCode).toBe(429);
    // Another operator behind the same proxy signs in as usual.
    expect((await signIn(PROXY, { "x-forwarded-for": "203.0.113.6" })).statusCode).toBe(401);
    const ok = await signIn(PROXY, { "x-forwarded-for": "203.0.113.6", "x-forwarded-proto": "https" }, token);
    expect(ok.statusCode).toBe(303);
    expect(ok.headers["set-cookie"]).toMatch(/; Secure/);
    // The limit was logged with the client's address, not the proxy's.
    expect(t.logs.join("")).toMatch(/"client_ip":"203\.0\.113\.5"[^\n]*sign-in attempts/);
  });

  test("behavior: an untrusted peer's X-Forwarded-For changes nothing: its own address is counted", async () => {
    const peer = "198.51.100.9";
    for (let i = 0; i < ATTEMPTS_PER_MINUTE; i++) expect((await signIn(peer, { "x-forwarded-for": `192.0.2.${i}` })).statusCode).toBe(401);
    expect((await signIn(peer, { "x-forwarded-for": "192.0.2.200" })).statusCode).toBe(429);
    expect((await signIn(peer, {})).statusCode).toBe(429);
    // Another peer is not affected.
    expect((await signIn("198.51.100.10", { "x-forwarded-for": "198.51.100.9" })).statusCode).toBe(401);
  });

  test("behavior: the request log names the client the trusted proxy reports, and an untrusted peer by its own address", async () => {
    const before = t.logs.length;
    await app.inject({ method: "GET", url: "/v1/balance", remoteAddress: PROXY, headers: { authorization: `Bearer ${token}`, "x-forwarded-for": "203.0.113.77" } });
    await app.inject({ method: "GET", url: "/v1/balance", remoteAddress: "198.51.100.20", headers: { authorization: `Bearer ${token}`, "x-forwarded-for": "203.0.113.78" } });
    const lines = t.logs.slice(before).filter((l) => l.includes('"msg":"request"'));
    expect(lines).toHaveLength(2);
    expect(lines[0]).toContain('"client_ip":"203.0.113.77"');
    expect(lines[1]).toContain('"client_ip":"198.51.100.20"');
    expect(lines[1]).not.toContain("203.0.113.78");
  });

  test("behavior: the session cookie is Secure when the trusted proxy says https, not over plain http", async () => {
    const plain = await signIn(PROXY, { "x-forwarded-for": "203.0.113.30", "x-forwarded-proto": "http" }, token);
    expect(plain.statusCode).toBe(303);
    expect(plain.headers["set-cookie"]).not.toMatch(/Secure/);
    const direct = await signIn("203.0.113.31", {}, token);
    expect(direct.headers["set-cookie"]).not.toMatch(/Secure/);
  });
});

describe("without TRUST_PROXY, forwarding headers are ignored", () => {
  let t: TestContext;
  let app: FastifyInstance;
  beforeAll(async () => {
    t = await createTestContext("sqlite");
    app = buildApp(t.ctx);
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  test("behavior: X-Forwarded-For from the peer does not split its count", async () => {
    const signIn = (xff: string) =>
      app.inject({ method: "POST", url: "/console/signin", remoteAddress: PROXY, payload: "kind=token&secret=x", headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": xff } });
    for (let i = 0; i < ATTEMPTS_PER_MINUTE; i++) expect((await signIn(`203.0.113.${i}`)).statusCode).toBe(401);
    expect((await signIn("203.0.113.250")).statusCode).toBe(429);
  });
});

describe("TRUST_PROXY as a hop count trusts that many hops from the server", () => {
  let t: TestContext;
  let app: FastifyInstance;
  beforeAll(async () => {
    t = await createTestContext("sqlite", { env: { TRUST_PROXY: "1" } });
    app = buildApp(t.ctx);
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  test("behavior: the address one hop out is the client; anything the client prepended is not", async () => {
    const before = t.logs.length;
    await app.inject({ method: "GET", url: "/healthz", remoteAddress: PROXY, headers: { "x-forwarded-for": "192.0.2.1, 203.0.113.40" } });
    const line = t.logs.slice(before).find((l) => l.includes('"msg":"request"'))!;
    expect(line).toContain('"client_ip":"203.0.113.40"');
  });
});
