// Which IP addresses the x402 rail may dial.
//
// The service proxies agent requests to arbitrary URLs from inside our network, so an address is
// "public" only when it is ordinary global unicast: ipaddr.js `range() === "unicast"` after unwrapping
// every IPv6 form that embeds an IPv4 address, and for IPv6 additionally inside 2000::/3, the only block
// IANA hands out as global unicast (ipaddr.js calls unassigned space such as 4000::/3 or the deprecated
// IPv4-compatible ::a.b.c.d "unicast" too, and those must not slip through).
//
// Embedded IPv4 forms:
// - IPv4-mapped ::ffff:a.b.c.d: the kernel dials a.b.c.d itself, so a.b.c.d is judged.
// - NAT64 well-known prefix 64:ff9b::/96 (RFC 6052): a NAT64 gateway forwards to the embedded a.b.c.d, so
//   a.b.c.d is judged. DNS64 resolvers synthesise these for IPv4-only targets on IPv6-only hosts, which is
//   why a public embedded address is allowed rather than refusing the whole prefix.
// - Everything else that carries an IPv4 address (IPv4-compatible ::/96, IPv4-translated ::ffff:0:0:0/96,
//   NAT64 local-use 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32) is refused outright: no paying
//   merchant needs them and each is a way to reach an arbitrary IPv4 host through a relay. The reason names
//   the embedded address so the refusal is understandable.
//
// Input must be a canonical IP literal as `net.isIP` accepts it (what DNS lookups return and what the
// WHATWG URL parser produces); anything else is refused, so odd spellings fail closed.

import net from "node:net";
import ipaddr from "ipaddr.js";

/** The verdict on one address: public, or refused with a short human reason ("loopback"). */
export type AddressVerdict =
  | { readonly public: true; readonly address: string }
  | { readonly public: false; readonly address: string; readonly reason: string };

/** True only for public unicast addresses (see the header of this file for what that means). */
export function isPublicAddress(address: string): boolean {
  return checkAddress(address).public;
}

/** Classifies one canonical IP literal (no brackets, no zone id required). */
export function checkAddress(address: string): AddressVerdict {
  const family = net.isIP(address);
  if (family === 0) return refuse(address, "not a canonical IP address");
  if (family === 4) return checkIpv4(address, ipaddr.IPv4.parse(address), "");
  return checkIpv6(address, ipaddr.IPv6.parse(hexIpv6(address)));
}

/** Strips the brackets the WHATWG URL parser keeps around IPv6 hostnames; null when not an IP literal. */
export function ipLiteralFromHostname(hostname: string): string | null {
  const unbracketed = hostname.startsWith("[") && hostname.endsWith("]") ? hostname.slice(1, -1) : hostname;
  return net.isIP(unbracketed) === 0 ? null : unbracketed;
}

// ---------------------------------------------------------------------------------------------------------

const IPV4_REASONS: Readonly<Record<string, string>> = {
  unspecified: "unspecified",
  broadcast: "broadcast",
  multicast: "multicast",
  linkLocal: "link-local",
  loopback: "loopback",
  carrierGradeNat: "carrier-grade NAT",
  private: "private network",
  reserved: "reserved",
  as112: "AS112 DNS sink",
  amt: "AMT relay anycast",
};

const IPV6_REASONS: Readonly<Record<string, string>> = {
  unspecified: "unspecified",
  linkLocal: "link-local",
  multicast: "multicast",
  loopback: "loopback",
  uniqueLocal: "unique-local",
  deprecatedSiteLocal: "site-local",
  discard: "discard-only",
  benchmarking: "benchmarking",
  amt: "AMT relay anycast",
  as112v6: "AS112 DNS sink",
  deprecatedOrchid: "ORCHID",
  orchid2: "ORCHIDv2",
  droneRemoteIdProtocolEntityTags: "DRIP entity tags",
  segmentRouting: "segment routing",
  reserved: "reserved",
};

// Named sub-ranges that ipaddr.js folds into a broader class; naming them makes refusals self-explanatory.
type NamedRange = readonly [ipaddr.IPv4 | ipaddr.IPv6, number, string];

const IPV4_DETAIL: ReadonlyArray<NamedRange> = namedRanges([
  ["255.255.255.255", 32, "broadcast"],
  ["169.254.169.254", 32, "link-local, cloud metadata service"],
  ["198.18.0.0", 15, "benchmarking"],
  ["192.0.2.0", 24, "documentation"],
  ["198.51.100.0", 24, "documentation"],
  ["203.0.113.0", 24, "documentation"],
  ["192.88.99.0", 24, "6to4 relay anycast"],
  ["240.0.0.0", 4, "reserved for future use"],
]);

const IPV6_DETAIL: ReadonlyArray<NamedRange> = namedRanges([
  ["fd00:ec2::254", 128, "unique-local, cloud metadata service"],
  ["2001:db8::", 32, "documentation"],
  ["3fff::", 20, "documentation"],
]);

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR("2000::/3");
const NAT64_WELL_KNOWN = ipaddr.parseCIDR("64:ff9b::/96");
const IPV4_COMPATIBLE = ipaddr.parseCIDR("::/96");

function checkIpv4(original: string, v4: ipaddr.IPv4, wrapping: string): AddressVerdict {
  const range = v4.range();
  if (range === "unicast") return { public: true, address: original };
  const shown = wrapping === "" ? "" : `${wrapping} ${v4.toString()}, `;
  return refuse(original, shown + (detailFor(v4, IPV4_DETAIL) ?? IPV4_REASONS[range] ?? range));
}

function checkIpv6(original: string, v6: ipaddr.IPv6): AddressVerdict {
  const range = v6.range();
  if (range === "ipv4Mapped") return checkIpv4(original, v6.toIPv4Address(), "IPv4-mapped");
  if (v6.match(NAT64_WELL_KNOWN)) return checkIpv4(original, embeddedTail(v6), "NAT64 of");
  if (range === "rfc6145") return refuse(original, `IPv4-translated form of ${embeddedTail(v6)}`);
  if (range === "rfc6052") return refuse(original, "NAT64 local-use prefix");
  if (range === "6to4") return refuse(original, `6to4 tunnel to ${sixToFourEmbedded(v6)}`);
  if (range === "teredo") return refuse(original, `Teredo tunnel to ${teredoEmbedded(v6)}`);
  if (range !== "unicast") {
    return refuse(original, detailFor(v6, IPV6_DETAIL) ?? IPV6_REASONS[range] ?? range);
  }
  // The two ipaddr.js calls "unicast" but which are not global: checked after the named ranges so that
  // :: and ::1 keep their own names.
  if (v6.match(IPV4_COMPATIBLE)) return refuse(original, `IPv4-compatible (deprecated) form of ${embeddedTail(v6)}`);
  if (!v6.match(GLOBAL_UNICAST_V6)) return refuse(original, "outside the global unicast block 2000::/3");
  return { public: true, address: original };
}

function namedRanges(rows: ReadonlyArray<readonly [string, number, string]>): NamedRange[] {
  return rows.map(([base, bits, reason]) => [ipaddr.parse(base), bits, reason] as const);
}

/** Callers pass the table of the address's own family; match() throws across families. */
function detailFor(address: ipaddr.IPv4 | ipaddr.IPv6, table: ReadonlyArray<NamedRange>): string | undefined {
  for (const [base, bits, reason] of table) {
    if (address.match(base, bits)) return reason;
  }
  return undefined;
}

/**
 * The all-hex spelling of an IPv6 address, without zone id. ipaddr.js reads any dotted tail as IPv4-mapped
 * (it parses ::1.0.0.0 as ::ffff:1.0.0.0, a public address, while the kernel dials ::100:0), so the WHATWG
 * URL serialiser, which writes the tail in hex, rewrites the text first.
 */
function hexIpv6(address: string): string {
  const withoutZone = address.split("%")[0]!;
  return new URL(`http://[${withoutZone}]/`).hostname.slice(1, -1);
}

/** The IPv4 address in the last 32 bits of an IPv6 address. */
function embeddedTail(v6: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = v6.toByteArray();
  return new ipaddr.IPv4(bytes.slice(12, 16));
}

/** 6to4 (RFC 3056): 2002:AABB:CCDD::/48 carries AA.BB.CC.DD in bits 16..47. */
function sixToFourEmbedded(v6: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = v6.toByteArray();
  return new ipaddr.IPv4(bytes.slice(2, 6));
}

/** Teredo (RFC 4380): the client's IPv4 address is the last 32 bits, inverted. */
function teredoEmbedded(v6: ipaddr.IPv6): ipaddr.IPv4 {
  const bytes = v6.toByteArray();
  return new ipaddr.IPv4(bytes.slice(12, 16).map((byte) => byte ^ 0xff));
}

function refuse(address: string, reason: string): AddressVerdict {
  return { public: false, address, reason };
}
