/**
 * API token format: `aw_<mode>_<32 base62 chars of randomness><6 base62 chars of checksum>`.
 * 32 base62 characters carry ~190 bits. The CRC-32 checksum lets us refuse a mistyped or truncated
 * token without a database lookup (and lets secret scanners recognise ours). Only the SHA-256 of the
 * whole token is stored. An operator's admin credential has the same shape with the `aw_admin_` prefix
 * (never a project token: it manages the deployment and cannot pay).
 */
import { createHash, randomBytes } from "node:crypto";
import { base62 } from "./ids.ts";

export type TokenMode = "test" | "live";
const BODY_CHARS = 32;
const CHECK_CHARS = 6;
const TOKEN_PATTERN = /^aw_(test|live)_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;
const ADMIN_PATTERN = /^aw_admin_([0-9A-Za-z]{32})([0-9A-Za-z]{6})$/;
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, "utf8")) crc = CRC_TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function checksum(prefixAndBody: string): string {
  let n = crc32(prefixAndBody);
  let out = "";
  for (let i = 0; i < CHECK_CHARS; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateToken(mode: TokenMode): string {
  return withChecksum(`aw_${mode}_`);
}

/** An operator's admin credential: `aw_admin_` and the same body and checksum as a token. */
export function generateAdminCredential(): string {
  return withChecksum("aw_admin_");
}

function withChecksum(prefix: string): string {
  const head = `${prefix}${base62(randomBytes(BODY_CHARS * 2), BODY_CHARS)}`;
  return head + checksum(head);
}

/** True when the text has the admin credential's shape and its checksum matches. */
export function isWellFormedAdminCredential(text: string): boolean {
  const m = ADMIN_PATTERN.exec(text);
  return !!m && checksum(`aw_admin_${m[1]}`) === m[2];
}

/** True when the text has our token shape and its checksum matches. */
export function isWellFormedToken(token: string): boolean {
  const m = TOKEN_PATTERN.exec(token);
  if (!m) return false;
  return checksum(`aw_${m[1]}_${m[2]}`) === m[3];
}

export function hashToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/** What may be shown of a token (or admin credential) after creation: the prefix and four characters. */
export function displayPrefix(token: string): string {
  return token.slice(0, token.indexOf("_", 3) + 1 + 4);
}
