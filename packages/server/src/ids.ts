/**
 * Identifiers: a type prefix, 10 characters of time (so ids sort roughly by creation and leak only a
 * millisecond timestamp), and 16 random characters (~95 bits), base62.
 */
import { randomBytes } from "node:crypto";

const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export function base62(bytes: Uint8Array, length: number): string {
  let out = "";
  // Rejection sampling keeps every character uniform (256 is not a multiple of 62).
  let pool = bytes;
  let i = 0;
  while (out.length < length) {
    if (i >= pool.length) {
      pool = randomBytes(length * 2);
      i = 0;
    }
    const b = pool[i++]!;
    if (b < 248) out += ALPHABET[b % 62];
  }
  return out;
}

function timePart(ms: number): string {
  let n = ms;
  let out = "";
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export type IdKind = "prj" | "tok" | "txn" | "mov";
export type IdGenerator = (kind: IdKind) => string;

export const newId: IdGenerator = (kind) => `${kind}_${timePart(Date.now())}${base62(randomBytes(24), 16)}`;

export type Clock = () => Date;
export const systemClock: Clock = () => new Date();
