// SSRF: every URL an attacker would try against the x402 proxy is refused in live mode, and nothing is
// dialled. Real listeners on loopback (127.0.0.1 and ::1, one port for http:// URLs and one for https://)
// count connections, so "refused" means "no socket was opened", not just "an error came back".

import dns from "node:dns";
import net from "node:net";
import fc from "fast-check";
import { afterAll, describe, expect, test } from "vitest";
import { isPublicAddress } from "../src/rails/ipPolicy.ts";
import { createSafeFetcher, type LookupFunction, type SafeFetch } from "../src/rails/safeFetch.ts";
import { SafeFetchError, type SafeFetchErrorCode } from "../src/rails/safeFetchErrors.ts";

// --- counting listeners ----------------------------------------------------------------------------------

type CountingListener = { port: number; connections: () => number; close: () => Promise<void> };

/** A plain TCP listener on 127.0.0.1 and, when available, ::1 on the same port; counts and drops sockets. */
async function startCountingListener(): Promise<CountingListener> {
  let connections = 0;
  const onConnection = (socket: net.Socket): void => {
    connections += 1;
    socket.destroy();
  };
  const v4 = net.createServer(onConnection);
  await new Promise<void>((resolve) => v4.listen(0, "127.0.0.1", resolve));
  const port = (v4.address() as net.AddressInfo).port;
  const v6 = net.createServer(onConnection);
  const v6Listening = await new Promise<boolean>((resolve) => {
    v6.once("error", () => resolve(false));
    v6.listen(port, "::1", () => resolve(true));
  });
  return {
    port,
    connections: () => connections,
    close: async () => {
      await new Promise((resolve) => v4.close(resolve));
      if (v6Listening) await new Promise((resolve) => v6.close(resolve));
    },
  };
}

// --- the injected resolver -------------------------------------------------------------------------------

// Names an attacker controls in DNS, pointing at internal addresses (or mixing public and internal ones).
const RESOLVES_TO: Readonly<Record<string, readonly string[]>> = {
  "internal.test": ["127.0.0.1"],
  "127.0.0.1.nip.test": ["127.0.0.1"],
  "loopback6.test": ["::1"],
  "metadata.test": ["169.254.169.254"],
  "private.test": ["10.1.2.3"],
  "zero.test": ["0.0.0.0"],
  "mapped.test": ["::ffff:127.0.0.1"],
  "compat.test": ["::7f00:1"],
  "nat64.test": ["64:ff9b::7f00:1"],
  "ec2v6.test": ["fd00:ec2::254"],
  "mixed.test": ["93.184.215.14", "127.0.0.1"],
  "mixed-private-first.test": ["192.168.1.10", "93.184.215.14"],
  "mixed6.test": ["2606:2800:21f:cb07:6820:80da:af6b:8b2c", "::1"],
};

const testLookup: LookupFunction = (hostname, options, callback) => {
  const addresses = RESOLVES_TO[hostname.toLowerCase()];
  if (addresses === undefined) return dns.lookup(hostname, options, callback);
  callback(
    null,
    addresses.map((address) => ({ address, family: net.isIP(address) })),
  );
};

// --- the list --------------------------------------------------------------------------------------------

// Hosts that must be refused with `host_not_allowed`, each tried as https://host:PORT/ and http://host:PORT/.
const REFUSED_HOSTS: readonly string[] = [
  // loopback, every spelling the WHATWG parser normalises to 127.x
  "127.0.0.1",
  "127.0.0.2",
  "127.255.255.254",
  "127.1",
  "127.0.1",
  "2130706433",
  "017700000001",
  "0177.0.0.1",
  "0177.1",
  "0x7f000001",
  "0x7f.1",
  "0x7f.0.0.1",
  "127.000.000.001",
  "127.0.0.1.",
  // unspecified
  "0",
  "0.0.0.0",
  "0x0",
  // RFC 1918
  "10.0.0.1",
  "10.255.255.255",
  "012.0.0.1",
  "172.16.0.1",
  "172.31.255.254",
  "192.168.0.1",
  "192.168.1.1",
  "3232235777",
  // link-local and cloud metadata
  "169.254.169.254",
  "169.254.0.1",
  "2852039166",
  "0xa9fea9fe",
  // carrier-grade NAT, benchmarking, documentation, reserved, multicast, broadcast
  "100.64.0.1",
  "100.127.255.254",
  "198.18.0.1",
  "192.0.2.1",
  "198.51.100.1",
  "203.0.113.1",
  "192.0.0.1",
  "240.0.0.1",
  "224.0.0.1",
  "239.255.255.250",
  "255.255.255.255",
  // IPv6 literals
  "[::1]",
  "[::]",
  "[0:0:0:0:0:0:0:1]",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[0:0:0:0:0:ffff:127.0.0.1]",
  "[::ffff:10.0.0.1]",
  "[::ffff:169.254.169.254]",
  "[::127.0.0.1]",
  "[::ffff:0:127.0.0.1]",
  "[fe80::1]",
  "[fc00::1]",
  "[fd00::]",
  "[fd00:ec2::254]",
  "[fec0::1]",
  "[ff02::1]",
  "[64:ff9b::7f00:1]",
  "[64:ff9b::a9fe:a9fe]",
  "[64:ff9b:1::1]",
  "[2002:7f00:1::1]",
  "[2001:0:4136:e378:8000:63bf:80ff:fffe]",
  "[2001:db8::1]",
  "[100::1]",
  // names
  "localhost",
  "localhost.",
  "LOCALHOST",
  "api.localhost",
  ...Object.keys(RESOLVES_TO),
];

type Case = { url: string; expected: SafeFetchErrorCode };

function casesFor(ports: { http: number; https: number }, allowHttp: boolean): Case[] {
  const cases: Case[] = [];
  for (const host of REFUSED_HOSTS) {
    cases.push({ url: `https://${host}:${ports.https}/`, expected: "host_not_allowed" });
    cases.push({
      url: `http://${host}:${ports.http}/latest/meta-data/`,
      expected: allowHttp ? "host_not_allowed" : "scheme_not_allowed",
    });
  }
  const p = ports.https;
  cases.push(
    // Credentials in the URL, wherever they point.
    { url: `https://user:pass@example.com/`, expected: "url_invalid" },
    { url: `https://user@127.0.0.1:${p}/`, expected: "url_invalid" },
    { url: `https://example.com@127.0.0.1:${p}/`, expected: "url_invalid" },
    { url: `https://:secret@[::1]:${p}/`, expected: "url_invalid" },
    // Backslash ends the authority for special schemes: the host here is 127.0.0.1.
    { url: `https://127.0.0.1:${p}\\@example.com/`, expected: "host_not_allowed" },
    // Schemes other than http(s).
    { url: "file:///etc/passwd", expected: "scheme_not_allowed" },
    { url: `ftp://127.0.0.1:${p}/`, expected: "scheme_not_allowed" },
    { url: `gopher://127.0.0.1:${p}/_GET%20/`, expected: "scheme_not_allowed" },
    { url: "data:text/plain,hello", expected: "scheme_not_allowed" },
    { url: `dict://127.0.0.1:${p}/info`, expected: "scheme_not_allowed" },
    { url: `ws://127.0.0.1:${p}/`, expected: "scheme_not_allowed" },
    { url: `wss://127.0.0.1:${p}/`, expected: "scheme_not_allowed" },
    { url: "javascript:alert(1)", expected: "scheme_not_allowed" },
    { url: `ldap://127.0.0.1:${p}/`, expected: "scheme_not_allowed" },
    // Not URLs at all.
    { url: `https://[::1:${p}/`, expected: "url_invalid" },
    { url: `//127.0.0.1:${p}/`, expected: "url_invalid" },
    { url: `https://example.com/${"a".repeat(2100)}`, expected: "url_invalid" },
  );
  if (!allowHttp) cases.push({ url: `http://example.com:${ports.http}/`, expected: "scheme_not_allowed" });
  return cases;
}

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

async function expectRefused(fetch: SafeFetch, { url, expected }: Case): Promise<void> {
  const error = await fetch({ url, method: "GET" }).then(
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
