// The SSRF target list, shared by the fetcher's unit test (safeFetch.ssrf.test.ts) and the end-to-end
// test through POST /v1/pay (x402/ssrf.e2e.test.ts): hosts and URLs an attacker would try against the
// x402 proxy, a resolver that points attacker-controlled names at internal addresses, and real loopback
// listeners that count connections, so "refused" means "no socket was opened".

import dns from "node:dns";
import net from "node:net";
import type { LookupFunction } from "../../src/net/safeFetch.ts";
import type { SafeFetchErrorCode } from "../../src/net/safeFetchErrors.ts";

// --- counting listeners ----------------------------------------------------------------------------------

export type CountingListener = { port: number; connections: () => number; close: () => Promise<void> };

/** A plain TCP listener on 127.0.0.1 and, when available, ::1 on the same port; counts and drops sockets. */
export async function startCountingListener(): Promise<CountingListener> {
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
export const RESOLVES_TO: Readonly<Record<string, readonly string[]>> = {
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

export const testLookup: LookupFunction = (hostname, options, callback) => {
  const addresses = RESOLVES_TO[hostname.toLowerCase()];
  if (addresses === undefined) return dns.lookup(hostname, options, callback);
  callback(
    null,
    addresses.map((address) => ({ address, family: net.isIP(address) })),
  );
};

// --- the list --------------------------------------------------------------------------------------------

// Hosts that must be refused with `host_not_allowed`, each tried as https://host:PORT/ and http://host:PORT/.
export const REFUSED_HOSTS: readonly string[] = [
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

export type SsrfCase = { url: string; expected: SafeFetchErrorCode };

export function casesFor(ports: { http: number; https: number }, allowHttp: boolean): SsrfCase[] {
  const cases: SsrfCase[] = [];
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
