/**
 * Whether a text carries one of our tokens or admin credentials in a form its recipient would read as one.
 * Such text is never forwarded to a payment target or stored (the API's body parser, the x402 fetcher's URL,
 * body and headers, the Idempotency-Key), and a target's reply that carries one has it cut out before the reply
 * is stored or returned (`redactServiceTokens`).
 *
 * The prefix (`aw_live_`, `aw_test_`, `aw_admin_`) is what is looked for, in the text as it is and as a target
 * would decode it, layer on layer in any order:
 *   - percent-encoding (`%5F`, also `%u005F`), repeated: `%25255F` is `_` after three decodings;
 *   - JSON and JavaScript string escapes (`\u005f`, `\x5f`, with any number of backslashes);
 *   - HTML character references (`&#95;`, `&#x5f;`, `&lowbar;`, `&amp;#95;`);
 *   - base64 and base64url: every run of base64 characters long enough to hold a prefix is decoded (and what it
 *     decodes to is scanned the same way), and the prefix's base64 at each of the three byte alignments is
 *     looked for directly, so one encoded inside a longer run of letters is found too.
 * The work is bounded: each layer of text escapes shrinks the text and at most `ROUNDS_MAX` are undone; base64
 * is followed `BASE64_DEPTH_MAX` levels deep; so a text costs a small constant times its length, which its
 * caller bounds (the body limit, the x402 limits). A target decoding deeper than these bounds is not one that
 * exists; an agent set on leaking its token can always transform it in ways no filter reads (decisions.md,
 * "Our tokens never leave or get stored").
 */
import { Buffer } from "node:buffer";

const PREFIXES = ["aw_live_", "aw_test_", "aw_admin_"] as const;
const PREFIX = /aw_(?:live|test|admin)_/;
const PREFIX_G = /aw_(?:live|test|admin)_[0-9A-Za-z]*/g;

/** Layers of text escapes (percent, JSON, HTML) undone, in any order: more than any chain of decoders does. */
const ROUNDS_MAX = 8;
/** Base64 inside base64 (inside text escapes): two levels, as a base64 header value of a base64 body. */
const BASE64_DEPTH_MAX = 2;
/** The shortest base64 that decodes to 8 bytes, the shortest prefix. */
const BASE64_RUN_CHARS_MIN = 11;

/** The prefixes' base64 at each byte alignment, either alphabet: only the characters the prefix alone decides. */
const BASE64_PREFIX = new RegExp(
  PREFIXES.flatMap((p) =>
    [0, 1, 2].map((shift) => {
      const bytes = Buffer.concat([Buffer.alloc(shift), Buffer.from(p, "latin1")]);
      const text = bytes.toString("base64");
      const first = shift === 0 ? 0 : shift + 1; // characters that mix in the unknown bytes before the prefix
      const last = Math.floor((bytes.length * 8) / 6); // characters whose six bits are all known
      return text.slice(first, last).replace(/[+/]/g, (c) => (c === "+" ? "[+-]" : "[/_]"));
    }),
  ).join("|"),
);

/** True when the text, or what a target would decode it to, contains a token's prefix. */
export function carriesServiceToken(text: string): boolean {
  return scan(text, 0);
}

/**
 * The text with every token in it replaced by `[redacted token]`; undefined when one remains in an encoded
 * form that cannot be cut out alone (the caller then drops the whole text).
 */
export function redactServiceTokens(text: string): string | undefined {
  if (!carriesServiceToken(text)) return text;
  const cut = text.replace(PREFIX_G, "[redacted token]");
  return carriesServiceToken(cut) ? undefined : cut;
}

function scan(text: string, depth: number): boolean {
  let t = text;
  for (let round = 0; ; round++) {
    if (PREFIX.test(t) || BASE64_PREFIX.test(t)) return true;
    const next = round < ROUNDS_MAX ? decodeOnce(t) : t;
    if (next === t) break;
    t = next;
  }
  if (depth >= BASE64_DEPTH_MAX) return false;
  const decoded = base64Runs(t).map((run) => Buffer.from(run, "base64").toString("latin1"));
  // All runs decoded are scanned as one text, each on a line of its own: a line break is in no prefix and no escape.
  return decoded.length > 0 && scan(decoded.join("\n"), depth + 1);
}

/** The runs of base64 characters (either alphabet) long enough to decode to a prefix. */
function base64Runs(t: string): string[] {
  const runs: string[] = [];
  let start = 0;
  for (let i = 0; i <= t.length; i++) {
    if (i < t.length && isBase64Char(t.charCodeAt(i))) continue;
    if (i - start >= BASE64_RUN_CHARS_MIN) runs.push(t.slice(start, i));
    start = i + 1;
  }
  return runs;
}

function isBase64Char(c: number): boolean {
  const l = c | 0x20;
  return (l >= 0x61 && l <= 0x7a) || (c >= 0x30 && c <= 0x39) || c === 0x2b || c === 0x2f || c === 0x5f || c === 0x2d;
}

/**
 * One layer of each text escape, in one pass; the result is never longer than the input, and is the input
 * itself when nothing was decoded. A hand-written loop: a regular expression with a replacer function costs
 * microseconds per escape, which an adversarial body multiplies.
 */
function decodeOnce(text: string): string {
  let parts: string[] | undefined;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== PERCENT && c !== BACKSLASH && c !== AMPERSAND) continue;
    const decoded = c === PERCENT ? percentAt(text, i) : c === BACKSLASH ? escapeAt(text, i) : referenceAt(text, i);
    if (!decoded) {
      // A run of backslashes that escapes nothing is passed over whole: each of them would find the same end.
      if (c === BACKSLASH) while (text.charCodeAt(i + 1) === BACKSLASH) i++;
      continue;
    }
    (parts ??= []).push(text.slice(from, i), decoded.char);
    from = i + decoded.length;
    i = from - 1;
  }
  if (!parts) return text;
  parts.push(text.slice(from));
  return parts.join("");
}

const PERCENT = 0x25;
const BACKSLASH = 0x5c;
const AMPERSAND = 0x26;
type Decoded = { char: string; length: number };

/** `%5F` or `%u005F` at i. */
function percentAt(t: string, i: number): Decoded | undefined {
  const u = t.charCodeAt(i + 1) | 0x20;
  if (u === 0x75 /* u */) {
    const n = hexAt(t, i + 2, 4);
    return n < 0 ? undefined : { char: String.fromCharCode(n), length: 6 };
  }
  const n = hexAt(t, i + 1, 2);
  return n < 0 ? undefined : { char: String.fromCharCode(n), length: 3 };
}

/** `\u005f`, `\x5f` or `\/` at i, behind any number of backslashes (a string escaped once per layer). */
function escapeAt(t: string, i: number): Decoded | undefined {
  let j = i;
  while (t.charCodeAt(j) === BACKSLASH) j++;
  const kind = t.charCodeAt(j);
  if (kind === 0x2f /* / */) return { char: "/", length: j + 1 - i };
  const digits = kind === 0x75 /* u */ ? 4 : kind === 0x78 /* x */ ? 2 : 0;
  const n = digits ? hexAt(t, j + 1, digits) : -1;
  return n < 0 ? undefined : { char: String.fromCharCode(n), length: j + 1 + digits - i };
}

const NAMED: ReadonlyMap<string, string> = new Map([
  ["&lowbar;", "_"],
  ["&UnderBar;", "_"],
  ["&amp;", "&"],
]);

/** An HTML character reference at i: `&#95;`, `&#x5f;` (the `;` optional, as browsers allow) or a named one. */
function referenceAt(t: string, i: number): Decoded | undefined {
  if (t.charCodeAt(i + 1) === 0x23 /* # */) {
    const hex = (t.charCodeAt(i + 2) | 0x20) === 0x78; /* x */
    let j = i + (hex ? 3 : 2);
    let n = 0;
    const start = j;
    for (; j - start < (hex ? 6 : 7); j++) {
      const d = hex ? hexDigit(t.charCodeAt(j)) : decimalDigit(t.charCodeAt(j));
      if (d < 0) break;
      n = n * (hex ? 16 : 10) + d;
    }
    if (j === start || n > 0x10ffff) return undefined;
    if (t.charCodeAt(j) === 0x3b /* ; */) j++;
    return { char: String.fromCodePoint(n), length: j - i };
  }
  for (const [name, char] of NAMED) if (t.startsWith(name, i)) return { char, length: name.length };
  return undefined;
}

/** The value of `count` hex digits at i, or -1. */
function hexAt(t: string, i: number, count: number): number {
  let n = 0;
  for (let k = 0; k < count; k++) {
    const d = hexDigit(t.charCodeAt(i + k));
    if (d < 0) return -1;
    n = n * 16 + d;
  }
  return n;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const l = c | 0x20;
  return l >= 0x61 && l <= 0x66 ? l - 0x61 + 10 : -1;
}

function decimalDigit(c: number): number {
  return c >= 0x30 && c <= 0x39 ? c - 0x30 : -1;
}
