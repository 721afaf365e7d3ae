/**
 * The API's JSON body parser. Beyond Fastify's (which it calls: prototype poisoning refused), it refuses
 * two things a plain `JSON.parse` lets through:
 *   - a key given twice in one object, at any depth (`{"amount_usd":-1,"amount_usd":0.02}` would otherwise
 *     be read as its last value, while a proxy or a log in front of us may have judged the first);
 *   - one of our own API tokens anywhere in the body (an x402 URL, its query, a proxied body, a
 *     description…): the service would forward it to a third party or store it in plain text.
 * Both checks are one pass over the text or the parsed value: linear in the body, which Fastify bounds.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { badRequest } from "../domain/errors.ts";
import { carriesServiceToken } from "../tokenScan.ts";

export function registerJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (req: FastifyRequest, body: string | Buffer, done) => {
    const text = typeof body === "string" ? body : body.toString("utf8");
    parseJson(req, text, (err: Error | null, value?: unknown) => {
      if (err) return done(err, undefined);
      const duplicate = findDuplicateKey(text);
      if (duplicate) {
        return done(badRequest("duplicate_json_key", `The JSON body gives the key "${duplicate.key.slice(0, 60)}" more than once (at ${duplicate.path}); send each key once.`), undefined);
      }
      const token = findServiceToken(value);
      if (token) {
        return done(
          badRequest(
            "token_in_request",
            `The request body carries an Agent Wallet API token (at ${token}). A token goes only in the Authorization header: it is never forwarded to a payment target or stored. Remove it, and revoke the token if it was shared.`,
          ),
          undefined,
        );
      }
      done(null, value);
    });
  });
}

/**
 * The first key that appears twice in one object of a JSON text, with its path, or undefined. The text
 * must be valid JSON (parsed before). Keys are compared decoded, so `"a"` and `"\u0061"` are the same key.
 */
export function findDuplicateKey(text: string): { key: string; path: string } | undefined {
  type Frame = { keys: Set<string> | undefined; key: string; index: number; expectKey: boolean };
  const stack: Frame[] = [];
  const pathOf = (key: string) => `$${stack.slice(0, -1).map((f) => (f.keys ? `.${f.key}` : `[${f.index}]`)).join("")}.${key}`;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      const start = i;
      let escaped = false;
      for (i++; i < text.length; i++) {
        const d = text.charCodeAt(i);
        if (d === 0x5c /* \ */) {
          escaped = true;
          i++;
        } else if (d === 0x22) break;
      }
      const top = stack[stack.length - 1];
      if (top?.keys && top.expectKey) {
        const raw = text.slice(start, i + 1);
        const key = escaped ? (JSON.parse(raw) as string) : raw.slice(1, -1);
        if (top.keys.has(key)) return { key, path: pathOf(key) };
        top.keys.add(key);
        top.key = key;
        top.expectKey = false;
      }
    } else if (c === 0x7b /* { */) {
      stack.push({ keys: new Set(), key: "", index: 0, expectKey: true });
    } else if (c === 0x5b /* [ */) {
      stack.push({ keys: undefined, key: "", index: 0, expectKey: false });
    } else if (c === 0x7d /* } */ || c === 0x5d /* ] */) {
      stack.pop();
    } else if (c === 0x2c /* , */) {
      const top = stack[stack.length - 1];
      if (top?.keys) top.expectKey = true;
      else if (top) top.index++;
    }
  }
  return undefined;
}

/**
 * Where a parsed JSON value carries one of our tokens (in a string or a key, as a target would decode it: tokenScan.ts,
 * so a token in a URL's query is found too), as a path; undefined if nowhere. Iterative: no recursion
 * depth to exhaust.
 */
export function findServiceToken(value: unknown): string | undefined {
  const work: { v: unknown; path: string }[] = [{ v: value, path: "$" }];
  while (work.length) {
    const { v, path } = work.pop()!;
    if (typeof v === "string") {
      if (carriesServiceToken(v)) return path;
    } else if (Array.isArray(v)) {
      v.forEach((x, i) => work.push({ v: x, path: `${path}[${i}]` }));
    } else if (v !== null && typeof v === "object") {
      for (const [k, x] of Object.entries(v)) {
        if (carriesServiceToken(k)) return path;
        work.push({ v: x, path: `${path}.${k.slice(0, 60)}` });
      }
    }
  }
  return undefined;
}
