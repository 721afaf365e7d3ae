/**
 * Edges of HTTP that must never be guessed at: a body the server cannot decode (a content coding, a
 * charset other than UTF-8) is refused with 415 before anything reads it, so no payment is created from
 * bytes read as something they are not. Every answer is `{detail, code}`.
 */
import { gzipSync } from "node:zlib";
import type { FastifyInstance } from "fastify";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestContext, buildApp, createTestContext, projectWithToken } from "../support/context.ts";
import { dialects } from "../support/db.ts";
import { countRows } from "../../src/ledger/testing.ts";

const recipient = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const body = JSON.stringify({ recipient, amount_usd: 0.01 });

describe.each(dialects)("a body the server does not decode is 415 and creates nothing (%s)", (dialect) => {
  let t: TestContext;
  let app: FastifyInstance;
  let token: string;
  beforeAll(async () => {
    t = await createTestContext(dialect);
    app = buildApp(t.ctx);
    ({ token } = await projectWithToken(t.ctx));
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  const payments = () => countRows(t.ctx.ledger, "payments");
  const pay = (headers: Record<string, string>, payload: string | Buffer) =>
    app.inject({ method: "POST", url: "/v1/pay", payload, headers: { authorization: `Bearer ${token}`, "content-type": "application/json", ...headers } });

  test.each([
    ["Content-Encoding: gzip on an uncompressed body", { "content-encoding": "gzip" }, body],
    ["Content-Encoding: gzip on a gzipped body", { "content-encoding": "gzip" }, gzipSync(body)],
    ["Content-Encoding: br", { "content-encoding": "br" }, body],
    ["two codings", { "content-encoding": "identity, deflate" }, body],
    ["charset=utf-16", { "content-type": "application/json; charset=utf-16" }, body],
    ["charset=utf-16 on UTF-16 bytes", { "content-type": "application/json; charset=UTF-16LE" }, Buffer.from(body, "utf16le")],
    ["charset=latin1", { "content-type": "application/json;charset=\"iso-8859-1\"" }, body],
  ])("error: %s → 415 unsupported_media_type", async (_name, headers, payload) => {
    const before = await payments();
    const res = await pay(headers, payload);
    expect(res.statusCode).toBe(415);
    expect(Object.keys(res.json()).sort()).toEqual(["code", "detail"]);
    expect(res.json().code).toBe("unsupported_media_type");
    expect(await payments()).toBe(before);
  });

  test("error: a Content-Type that is not JSON is 415 with the same code", async () => {
    const res = await pay({ "content-type": "text/plain" }, body);
    expect(res.statusCode).toBe(415);
    expect(res.json()).toMatchObject({ code: "unsupported_media_type", detail: expect.stringMatching(/application\/json/) });
  });

  test("behavior: identity coding and charset=utf-8 (any case, quoted) are read as usual", async () => {
    const cases: Record<string, string>[] = [{ "content-encoding": "identity" }, { "content-type": "application/json; charset=UTF-8" }, { "content-type": "application/json; charset=\"utf-8\"" }, {}];
    for (const headers of cases) {
      const res = await pay(headers, body);
      // No rail in this context: the body was read and validated, and the refusal is the rail's, not the encoding's.
      expect(res.statusCode, JSON.stringify(headers)).not.toBe(415);
      expect(res.json().code).toBe("rail_unavailable");
    }
  });

  test("behavior: the console's form posts are held to the same rule", async () => {
    const res = await app.inject({ method: "POST", url: "/console/signin", payload: "kind=token&secret=x", headers: { "content-type": "application/x-www-form-urlencoded", "content-encoding": "gzip" } });
    expect(res.statusCode).toBe(415);
  });
});
