/**
 * What a request must be before any route reads it, checked once in `onRequest` for every route (API,
 * webhooks, console), so nothing is guessed:
 *   - an HTTP/1.1 request names its `Host` (RFC 9112 §3.2). Node answers a missing one itself with a bare
 *     400 and no body; the app turns that check off (`requireHostHeader: false`) and makes it here, so the
 *     answer is `{detail, code}` like every other;
 *   - the body is sent without a content coding: the server decodes none (decisions.md, "Content codings and
 *     charsets"), so `Content-Encoding: gzip` on any body is refused rather than read as plain text;
 *   - a charset, when the Content-Type names one, is UTF-8 (JSON is UTF-8, RFC 8259 §8.1; the console's forms
 *     are sent in the page's UTF-8); UTF-16 bytes read as UTF-8 would be another request.
 */
import type { IncomingHttpHeaders } from "node:http";

export type EdgeRefusal = { status: 400 | 415; detail: string; code: "malformed_http" | "unsupported_media_type" };

/** The reason a request is refused before routing, or undefined when it may go on. */
export function refuseAtTheEdge(httpVersion: string, headers: IncomingHttpHeaders): EdgeRefusal | undefined {
  if (httpVersion === "1.1" && headers.host === undefined) {
    return { status: 400, code: "malformed_http", detail: "Malformed HTTP request: an HTTP/1.1 request must carry a Host header; nothing was done. Send the server's host name in Host." };
  }
  const coding = headers["content-encoding"];
  if (coding !== undefined && !isIdentity(coding)) {
    return { status: 415, code: "unsupported_media_type", detail: `Content-Encoding '${printable(coding)}' is not accepted: the server decodes no content coding, so nothing was read. Send the body uncompressed, without Content-Encoding.` };
  }
  const charset = charsetOf(headers["content-type"]);
  if (charset !== undefined && !UTF8.has(charset.toLowerCase())) {
    return { status: 415, code: "unsupported_media_type", detail: `charset '${printable(charset)}' is not accepted: bodies are read as UTF-8 only, so nothing was read. Send UTF-8 (charset=utf-8, or no charset).` };
  }
  return undefined;
}

const UTF8: ReadonlySet<string> = new Set(["utf-8", "utf8"]);

/** `identity`, alone or repeated ("identity, identity"), is no coding at all. */
function isIdentity(value: string): boolean {
  return value.split(",").every((c) => c.trim().toLowerCase() === "identity" || c.trim() === "");
}

/** The `charset` parameter of a Content-Type (RFC 9110 §8.3.1), unquoted; undefined if none is given. */
function charsetOf(contentType: string | undefined): string | undefined {
  if (contentType === undefined) return undefined;
  const m = /;\s*charset\s*=\s*("([^"]*)"|[^;\s]*)/i.exec(contentType);
  if (!m) return undefined;
  return m[2] ?? m[1]!;
}

/** A header value as it may be echoed: printable ASCII, at most 40 characters. */
function printable(value: string): string {
  return value.replace(/[^\x20-\x7e]/g, "?").slice(0, 40);
}
