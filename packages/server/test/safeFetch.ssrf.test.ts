// SSRF: every URL an attacker would try against the x402 proxy is refused in live mode, and nothing is
// dialled. Real listeners on loopback (127.0.0.1 and ::1, one port for http:// URLs and one for https://)
// count connections, so "refused" means "no socket was opened", not just "an error came back".

import fc from "fast-check";
import { afterAll, describe, expect, test } from "vitest";
import { isPublicAddress } from "../src/net/ipPolicy.ts";
import { createSafeFetcher, type SafeFetch } from "../src/net/safeFetch.ts";
import { SafeFetchError } from "../src/net/safeFetchErrors.ts";
import { type SsrfCase, casesFor, startCountingListener, testLookup } from "./support/ssrfTargets.ts";

// --- the tests -------------------------------------------------------------------------------------------

// Started at collection time so that every URL can be its own test, with the real port in its name.
const httpListener = await startCountingListener();
const httpsListener = await startCountingListener();

afterAll(async () => {
  await httpListener.close();
  await httpsListener.close();
});

function connections(): number {
  return httpListener.connections() + httpsListener.connections();
}

/** The three ways the rail sends: a fresh connection, a kept one (unpaid request), one dialled ahead (paid retry). */
const MODES = ["fresh", "kept", "prepared"] as const;

function send(fetch: SafeFetch, url: string, mode: (typeof MODES)[number]) {
  if (mode === "prepared") return fetch.prepare(url).send({ url, method: "GET" });
  return fetch({ url, method: "GET" }, { reuseConnection: mode === "kept" });
}

async function expectRefused(fetch: SafeFetch, { url, expected }: SsrfCase, mode: (typeof MODES)[number] = "fresh"): Promise<void> {
  const error = await send(fetch, url, mode).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error, url).toBeInstanceOf(SafeFetchError);
  expect((error as SafeFetchError).code, `${url}: ${(error as Error).message}`).toBe(expected);
  expect((error as SafeFetchError).requestMayHaveBeenSent).toBe(false);
  expect(connections(), url).toBe(0);
}

describe.each([false, true])("live mode, allowHttp %s", (allowHttp) => {
  const fetch = createSafeFetcher({ allowHttp, allowPrivateNetworks: false, lookup: testLookup, timeoutMs: 5_000 });

  test("behavior: the list holds at least 60 distinct URLs", () => {
    const urls = new Set(casesFor({ http: 1, https: 2 }, allowHttp).map((c) => c.url));
    expect(urls.size).toBeGreaterThanOrEqual(60);
  });

  test.each(casesFor({ http: httpListener.port, https: httpsListener.port }, allowHttp))(
    "error: $url is refused with $expected",
    async (c) => expectRefused(fetch, c),
  );

  test("behavior: the same list is refused over kept and prepared connections too", async () => {
    for (const mode of ["kept", "prepared"] as const) {
      for (const c of casesFor({ http: httpListener.port, https: httpsListener.port }, allowHttp)) await expectRefused(fetch, c, mode);
    }
  });

  test("behavior: after the whole list the listeners recorded 0 connections", async () => {
    // A dial that slipped through could land after its fetch settled; give it a moment.
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(connections()).toBe(0);
  });

  test("behavior: the refusal says which address a name resolved to and why", async () => {
    const error = await fetch({ url: `https://mixed.test:${httpsListener.port}/`, method: "GET" }).catch(
      (caught: unknown) => caught as SafeFetchError,
    );
    expect(error).toMatchObject({ code: "host_not_allowed" });
    expect((error as SafeFetchError).message).toContain("resolves to 127.0.0.1 (loopback)");
  });
});

test("behavior: control — the same listeners do count a dial once private networks are allowed", async () => {
  const before = connections();
  const fetch = createSafeFetcher({ allowHttp: true, allowPrivateNetworks: true, lookup: testLookup, timeoutMs: 5_000 });
  const error = await fetch({ url: `http://127.0.0.1:${httpListener.port}/`, method: "GET" }).catch(
    (caught: unknown) => caught as SafeFetchError,
  );
  expect(error).toMatchObject({ code: "connect_failed" });
  expect(connections()).toBe(before + 1);
});

test("behavior: allowPrivateNetworks does not lift the scheme rule", async () => {
  const fetch = createSafeFetcher({ allowHttp: false, allowPrivateNetworks: true, lookup: testLookup });
  await expect(fetch({ url: `http://127.0.0.1:${httpListener.port}/`, method: "GET" })).rejects.toMatchObject({
    code: "scheme_not_allowed",
  });
  await expect(fetch({ url: "file:///etc/passwd", method: "GET" })).rejects.toMatchObject({
    code: "scheme_not_allowed",
  });
});

// --- isPublicAddress against an independent reading of the IANA registries ------------------------------

// IANA IPv4 Special-Purpose Address Registry (RFC 6890 and successors) plus multicast (RFC 5771) and the
// 240/4 block (RFC 1112), written as numbers so that nothing is shared with ipaddr.js. AS112 (RFC 7534/7535)
// and AMT (RFC 7450) anycast are globally reachable per IANA, but no merchant lives there and ipaddr.js
// classifies them apart, so the policy treats them as not public too.
const NOT_PUBLIC_V4: ReadonlyArray<readonly [string, number]> = [
  ["0.0.0.0", 8], // "this network" (RFC 791)
  ["10.0.0.0", 8], // private (RFC 1918)
  ["100.64.0.0", 10], // shared address space / CGNAT (RFC 6598)
  ["127.0.0.0", 8], // loopback (RFC 1122)
  ["169.254.0.0", 16], // link-local (RFC 3927)
  ["172.16.0.0", 12], // private (RFC 1918)
  ["192.0.0.0", 24], // IETF protocol assignments (RFC 6890)
  ["192.0.2.0", 24], // TEST-NET-1 (RFC 5737)
  ["192.31.196.0", 24], // AS112-v4 (RFC 7535)
  ["192.52.193.0", 24], // AMT (RFC 7450)
  ["192.88.99.0", 24], // 6to4 relay anycast (RFC 7526)
  ["192.168.0.0", 16], // private (RFC 1918)
  ["192.175.48.0", 24], // direct delegation AS112 (RFC 7534)
  ["198.18.0.0", 15], // benchmarking (RFC 2544)
  ["198.51.100.0", 24], // TEST-NET-2 (RFC 5737)
  ["203.0.113.0", 24], // TEST-NET-3 (RFC 5737)
  ["224.0.0.0", 4], // multicast (RFC 5771)
  ["240.0.0.0", 4], // reserved, includes 255.255.255.255 limited broadcast (RFC 1112, RFC 919)
];

const RANGES = NOT_PUBLIC_V4.map(([base, bits]) => {
  const start = toUint32(base);
  const size = 2 ** (32 - bits);
  return { start, end: start + size - 1 };
});

function toUint32(dotted: string): number {
  return dotted.split(".").reduce((value, octet) => value * 256 + Number(octet), 0);
}

function toDotted(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

function referenceIsPublic(value: number): boolean {
  return !RANGES.some(({ start, end }) => value >= start && value <= end);
}

function toHexTail(value: number): string {
  return `${Math.floor(value / 65536).toString(16)}:${(value % 65536).toString(16)}`;
}

// Uniform addresses rarely land in a special range, so half the draws sit on or next to a range boundary.
const ipv4 = fc.oneof(
  fc.integer({ min: 0, max: 2 ** 32 - 1 }),
  fc
    .record({
      range: fc.constantFrom(...RANGES),
      edge: fc.constantFrom("before", "start", "inside", "end", "after"),
      offset: fc.nat(),
    })
    .map(({ range, edge, offset }) => {
      const size = range.end - range.start + 1;
      const value = {
        before: range.start - 1,
        start: range.start,
        inside: range.start + (offset % size),
        end: range.end,
        after: range.end + 1,
      }[edge];
      return Math.min(2 ** 32 - 1, Math.max(0, value));
    }),
);

describe("isPublicAddress", () => {
  test("behavior: agrees with the reference on IPv4 addresses", () => {
    fc.assert(
      fc.property(ipv4, (value) => isPublicAddress(toDotted(value)) === referenceIsPublic(value)),
      { numRuns: 5_000 },
    );
  });

  test("behavior: IPv4-mapped and NAT64 forms are judged by the embedded IPv4 address", () => {
    fc.assert(
      fc.property(ipv4, (value) => {
        const expected = referenceIsPublic(value);
        return (
          isPublicAddress(`::ffff:${toDotted(value)}`) === expected &&
          isPublicAddress(`::ffff:${toHexTail(value)}`) === expected &&
          isPublicAddress(`64:ff9b::${toDotted(value)}`) === expected
        );
      }),
      { numRuns: 2_000 },
    );
  });

  test("behavior: IPv4-compatible, IPv4-translated, 6to4 and Teredo forms are never public", () => {
    fc.assert(
      fc.property(ipv4, (value) => {
        const tail = toHexTail(value);
        return [`::${toDotted(value)}`, `::ffff:0:${tail}`, `2002:${tail}::1`, `2001:0:1:2:3:4:${tail}`].every(
          (address) => !isPublicAddress(address),
        );
      }),
      { numRuns: 2_000 },
    );
  });

  test("behavior: IPv6 outside global unicast 2000::/3 is never public", () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 }), (parts) => {
        const address = parts.map((part) => part.toString(16)).join(":");
        const inGlobalUnicast = parts[0]! >= 0x2000 && parts[0]! <= 0x3fff;
        const isNat64 = parts.slice(0, 6).join(":") === "100:65435:0:0:0:0";
        return inGlobalUnicast || isNat64 || !isPublicAddress(address);
      }),
      { numRuns: 2_000 },
    );
  });

  test("default: well-known public addresses are public", () => {
    for (const address of ["1.1.1.1", "8.8.8.8", "93.184.215.14", "2606:4700:4700::1111", "2001:4860:4860::8888"]) {
      expect(isPublicAddress(address), address).toBe(true);
    }
  });

  test("behavior: anything but a canonical IP literal is not public", () => {
    for (const text of ["", "example.com", "0x7f000001", "127.1", "[::1]", "1.1.1.1.", " 1.1.1.1"]) {
      expect(isPublicAddress(text), text).toBe(false);
    }
  });
});
