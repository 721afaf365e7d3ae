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

export type IdKind = "prj" | "tok" | "txn" | "mov" | "whe" | "adm" | "quo";
export type IdGenerator = (kind: IdKind) => string;

/**
 * Random bytes for ids, taken from a pool refilled 4 KiB at a time: each call to the system's
 * generator cost ~15 µs on the payment path (three ids a hold), as much as the rest of the id. Ids
 * name rows, they are not secrets; tokens draw their own bytes (tokens.ts).
 */
const ID_POOL_BYTES = 4_096;
let idPool = new Uint8Array(0);
let idPoolAt = 0;
function idBytes(n: number): Uint8Array {
  if (idPoolAt + n > idPool.length) {
    idPool = randomBytes(ID_POOL_BYTES);
    idPoolAt = 0;
  }
  const bytes = idPool.subarray(idPoolAt, idPoolAt + n);
  idPoolAt += n;
  return bytes;
}

export const newId: IdGenerator = (kind) => `${kind}_${timePart(Date.now())}${base62(idBytes(24), 16)}`;

export type Clock = () => Date;
export const systemClock: Clock = () => new Date();
