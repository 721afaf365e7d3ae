/**
 * A JWS offer or receipt of x402's offer-and-receipt extension (spec §3.3, §4.5, §5.5), checked with node:crypto
 * from the artifact alone: the compact serialization is split, its header's `kid` resolved to a public key, the
 * signature verified over `header.payload` with the header's `alg`, and the key's authorisation for the resource
 * judged. The spec names `ES256K` (secp256k1) and `EdDSA` (Ed25519); those two are checked, any other `alg` is
 * reported as unverifiable. A `kid` is resolved offline only: `did:jwk` (the key is in the id) and `did:key`
 * (Ed25519 or compressed secp256k1, multibase base58btc). A `did:web` key would have to be fetched from a URL the
 * merchant names, bypassing the SSRF-safe fetcher, so it is not: reported as unverifiable. Authorisation is the
 * spec's simplest mechanism (§4.5.1), as for EIP-712: a secp256k1 key whose Ethereum address is the `payTo`. An
 * Ed25519 key, or any other key, verifies the signature but is not shown to be authorised.
 */
import { type KeyObject, ECDH, createPublicKey, verify } from "node:crypto";
import { type Address, getAddress } from "viem";
import { publicKeyToAddress } from "viem/accounts";

export type JwsCheck =
  /** The signature holds under the key its `kid` names; `address` is that key's Ethereum address (secp256k1 only). */
  | { kind: "valid"; payload: Record<string, unknown>; kid: string; alg: string; address: Address | null }
  /** The JWS or its signature does not hold (altered, or not made by the key its `kid` names). */
  | { kind: "invalid"; detail: string }
  /** Well formed, but its key cannot be had offline or its algorithm is not one the spec names. */
  | { kind: "unverifiable"; detail: string };

/** Offers and receipts are small; a longer string is not one. */
const JWS_CHARS_MAX = 16_384;

const SECP256K1_SPKI_COMPRESSED = Buffer.from("3036301006072a8648ce3d020106052b8104000a032200", "hex");
const ED25519_SPKI = Buffer.from("302a300506032b6570032100", "hex");

type ResolvedKey = { key: KeyObject; curve: "secp256k1" | "ed25519"; uncompressed?: Buffer };

export function checkJws(compact: string): JwsCheck {
  if (typeof compact !== "string" || compact.length > JWS_CHARS_MAX) return { kind: "invalid", detail: "the JWS is not a compact serialization of a bounded size" };
  const parts = compact.split(".");
  if (parts.length !== 3 || parts.some((p) => !/^[A-Za-z0-9_-]*$/.test(p))) return { kind: "invalid", detail: "the JWS is not header.payload.signature in base64url" };
  const [h, p, s] = parts as [string, string, string];
  let header: { alg?: unknown; kid?: unknown };
  let payload: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(h, "base64url").toString("utf8"));
    payload = JSON.parse(Buffer.from(p, "base64url").toString("utf8"));
  } catch {
    return { kind: "invalid", detail: "the JWS header or payload is not base64url JSON" };
  }
  if (typeof payload !== "object" || payload === null) return { kind: "invalid", detail: "the JWS payload is not an object" };
  const { alg, kid } = header;
  if (typeof kid !== "string" || typeof alg !== "string") return { kind: "invalid", detail: "the JWS header names no alg or no kid (both are required)" };
  let resolved: ResolvedKey | string;
  try {
    resolved = resolveKid(kid);
  } catch (err) {
    return { kind: "invalid", detail: `its kid ${kid.slice(0, 80)} does not hold a usable key (${String((err as Error).message).slice(0, 80)})` };
  }
  if (typeof resolved === "string") return { kind: "unverifiable", detail: resolved };
  const expected = resolved.curve === "secp256k1" ? "ES256K" : "EdDSA";
  if (alg !== "ES256K" && alg !== "EdDSA") return { kind: "unverifiable", detail: `alg ${alg.slice(0, 20)} is not one the extension names (ES256K, EdDSA)` };
  if (alg !== expected) return { kind: "invalid", detail: `alg ${alg} does not fit the ${resolved.curve} key its kid names` };
  const signature = Buffer.from(s, "base64url");
  const input = Buffer.from(`${h}.${p}`, "ascii");
  let holds: boolean;
  try {
    holds = alg === "ES256K" ? signature.length === 64 && verify("sha256", input, { key: resolved.key, dsaEncoding: "ieee-p1363" }, signature) : verify(null, input, resolved.key, signature);
  } catch {
    holds = false;
  }
  if (!holds) return { kind: "invalid", detail: `the signature does not verify under the key its kid names (${kid.slice(0, 60)}…): the JWS was altered or not signed by that key` };
  const address = resolved.uncompressed ? publicKeyToAddress(`0x${resolved.uncompressed.toString("hex")}`) : null;
  return { kind: "valid", payload, kid, alg, address };
}

/** Whether a valid JWS's key is authorised for a resource paid to `payTo` (the spec's payTo-signing binding). */
export function jwsAuthorisedFor(check: Extract<JwsCheck, { kind: "valid" }>, payTo: string): boolean {
  try {
    return check.address !== null && getAddress(check.address) === getAddress(payTo);
  } catch {
    return false;
  }
}

/** The key a DID URL holds, or why it cannot be had offline. */
function resolveKid(kid: string): ResolvedKey | string {
  const did = kid.split("#")[0]!;
  if (did.startsWith("did:jwk:")) {
    const jwk = JSON.parse(Buffer.from(did.slice("did:jwk:".length), "base64url").toString("utf8")) as { kty?: string; crv?: string; x?: string; y?: string };
    if (jwk.kty === "EC" && jwk.crv === "secp256k1" && jwk.x && jwk.y) {
      const uncompressed = Buffer.concat([Buffer.from([4]), Buffer.from(jwk.x, "base64url"), Buffer.from(jwk.y, "base64url")]);
      return { key: createPublicKey({ key: { kty: "EC", crv: "secp256k1", x: jwk.x, y: jwk.y }, format: "jwk" }), curve: "secp256k1", uncompressed };
    }
    if (jwk.kty === "OKP" && jwk.crv === "Ed25519" && jwk.x) return { key: createPublicKey({ key: { kty: "OKP", crv: "Ed25519", x: jwk.x }, format: "jwk" }), curve: "ed25519" };
    return `its did:jwk key (${String(jwk.kty)}/${String(jwk.crv)}) is not secp256k1 or Ed25519`;
  }
  if (did.startsWith("did:key:z")) {
    const bytes = base58Decode(did.slice("did:key:z".length));
    if (bytes[0] === 0xed && bytes[1] === 0x01 && bytes.length === 34) return { key: createPublicKey({ key: Buffer.concat([ED25519_SPKI, bytes.subarray(2)]), format: "der", type: "spki" }), curve: "ed25519" };
    if (bytes[0] === 0xe7 && bytes[1] === 0x01 && bytes.length === 35) {
      const compressed = bytes.subarray(2);
      const uncompressed = ECDH.convertKey(compressed, "secp256k1", undefined, undefined, "uncompressed") as Buffer;
      return { key: createPublicKey({ key: Buffer.concat([SECP256K1_SPKI_COMPRESSED, compressed]), format: "der", type: "spki" }), curve: "secp256k1", uncompressed };
    }
    return "its did:key is not an Ed25519 or secp256k1 key";
  }
  return `its kid ${did.slice(0, 80)} would have to be resolved over the network (only did:jwk and did:key are resolved here)`;
}

const BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/** Bitcoin's base58 (multibase `z`), for the short keys a did:key holds. */
function base58Decode(text: string): Buffer {
  if (text.length > 128) throw new Error("did:key too long");
  let n = 0n;
  for (const c of text) {
    const digit = BASE58.indexOf(c);
    if (digit < 0) throw new Error("not base58");
    n = n * 58n + BigInt(digit);
  }
  const hex = n === 0n ? "" : n.toString(16);
  const body = Buffer.from(hex.length % 2 ? `0${hex}` : hex, "hex");
  const zeros = text.length - text.replace(/^1+/, "").length;
  return Buffer.concat([Buffer.alloc(zeros), body]);
}
