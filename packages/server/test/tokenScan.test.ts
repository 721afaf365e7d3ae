/**
 * The token filter reads text as its recipient would: a token's prefix is found however a target would decode
 * it (JSON escapes, HTML references, base64, percent-encoding repeated), ordinary text is never taken for one,
 * and an adversarial text costs a bounded multiple of its length.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, test } from "vitest";
import { generateAdminCredential, generateToken } from "../src/tokens.ts";
import { carriesServiceToken, redactServiceTokens } from "../src/tokenScan.ts";

const token = generateToken("test");
const live = generateToken("live");
const admin = generateAdminCredential();
const b64 = (s: string) => Buffer.from(s, "latin1").toString("base64");
const pct = (s: string) => [...s].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, "0")}`).join("");
const times = (n: number, f: (s: string) => string, s: string) => Array.from({ length: n }).reduce<string>((x) => f(x), s);

describe("carriesServiceToken", () => {
  test.each([
    ["as is", `{"key":"${token}"}`],
    ["a live token", `x ${live} y`],
    ["an admin credential", admin],
    ["JSON escapes (\\u005f)", `{"token":"${token.replace(/_/g, "\\u005f")}"}`],
    ["JSON escapes of every character", `"${[...token].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`).join("")}"`],
    ["JSON escapes escaped again (\\\\u005f)", token.replace(/_/g, "\\\\u005f")],
    ["JavaScript hex escapes (\\x5f)", token.replace(/_/g, "\\x5f")],
    ["HTML decimal references", `<input value="${token.replace(/_/g, "&#95;")}">`],
    ["HTML hex references", token.replace(/_/g, "&#x5F;")],
    ["an HTML reference without ';' (as browsers read it)", token.replace("_", "&#95").replace(/_/g, "&#x5f;")],
    ["HTML named references", token.replace(/_/g, "&lowbar;")],
    ["HTML references escaped again (&amp;#95;)", token.replace(/_/g, "&amp;#95;")],
    ["base64", b64(token)],
    ["base64 of a Basic credential", `Basic ${b64(`agent:${token}`)}`],
    ["base64url of JSON", Buffer.from(JSON.stringify({ t: token })).toString("base64url")],
    ["base64 after other letters, at each byte alignment", `abc${b64(`x${token}`)}def${b64(`xy${token}`)}`],
    ["base64 inside base64", b64(b64(token))],
    ["base64 of a percent-encoded token", b64(pct(token))],
    ["percent-encoded once", pct(token)],
    ["percent-encoded four times", times(4, (s) => encodeURIComponent(s).replace(/_/g, "%5F"), token)],
    ["percent-encoded in a URL's query, four times", `https://api.example.com/data?key=${times(4, (s) => encodeURIComponent(s.replace(/_/g, "%5F")), token)}`],
    ["%u escapes", token.replace(/_/g, "%u005F")],
    ["percent-encoded JSON escapes", encodeURIComponent(token.replace(/_/g, "\\u005f"))],
    ["HTML references inside base64", b64(token.replace(/_/g, "&#95;"))],
  ])("behavior: a token %s is found", (_name, text) => {
    expect(carriesServiceToken(text)).toBe(true);
  });

  test.each([
    ["an ordinary JSON body", JSON.stringify({ query: "weather in Paris", units: "metric", page: 2, tags: ["a_b", "test_case"], note: "draw_test is not a token" })],
    ["a URL with percent-encoding", "https://api.example.com/search?q=caf%C3%A9%20au%20lait&sort=-date&filter=%7B%22a%22%3A1%7D"],
    ["an HTML page", "<html><body><p>Tom &amp; Jerry &copy; 2026 &#169; &#x2014;</p><a href=\"/a?b=1&amp;c=2\">x</a></body></html>"],
    ["a JWT", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"],
    ["a base64 image of random bytes", `data:image/png;base64,${randomBytes(200_000).toString("base64")}`],
    ["escaped JSON inside JSON", JSON.stringify({ body: JSON.stringify({ a: "x\ny", b: "é", c: "a\\b" }) })],
    ["an Ethereum address and hash", "0x90F79bf6EB2c4f870365E785982E1f101E93b906 0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f"],
    ["words close to a prefix", "aw_tes aw-test- AW_TEST_ a w_test_ aw_testing_ aw__test_"],
  ])("behavior: %s is not taken for a token", (_name, text) => {
    expect(carriesServiceToken(text)).toBe(false);
  });

  test("behavior: an adversarial text costs a bounded multiple of its length", () => {
    const size = 1_000_000;
    const inputs = [
      `${"%25".repeat(size / 3)}41`,
      `${"x".repeat(size - 40)}${times(8, (s) => encodeURIComponent(s), "%41")}`,
      "\\".repeat(size),
      "&#".repeat(size / 2),
      `${"QUJDREVGR0hJSktM.".repeat(size / 17)}`,
      b64(b64(randomBytes(size / 2).toString("latin1"))),
    ];
    for (const text of inputs) {
      const started = process.cpuUsage();
      expect(carriesServiceToken(text)).toBe(false);
      const cpuMs = process.cpuUsage(started).user / 1000;
      // A generous bound on a shared machine; linear work is a few tens of milliseconds per megabyte.
      expect(cpuMs, text.slice(0, 40)).toBeLessThan(2_000);
    }
  });
});

describe("redactServiceTokens", () => {
  test("behavior: a token as is is cut out, the rest kept", () => {
    expect(redactServiceTokens(`{"echo":"${token}","n":1}`)).toBe('{"echo":"[redacted token]","n":1}');
  });
  test("behavior: an encoded token that cannot be cut out alone leaves nothing to keep", () => {
    expect(redactServiceTokens(`{"echo":"${b64(token)}"}`)).toBeUndefined();
  });
  test("behavior: ordinary text is returned as it is", () => {
    const text = JSON.stringify({ ok: true, data: "Tom &amp; Jerry" });
    expect(redactServiceTokens(text)).toBe(text);
  });
});
