/**
 * Bad input found by a probe of the running service: each is a clear 4xx `{detail, code}` and nothing
 * moves (no payment row, the balance unchanged, nothing sent to a target). Real server, real chain, both
 * databases; malformed HTTP is written as raw bytes on a socket.
 */
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type TestServer, startTestServer } from "../src/testing/harness.ts";
import { createPgSchema, dialects } from "./support/db.ts";
import { poll } from "./support/poll.ts";
import { countRows, tableRows } from "../src/ledger/testing.ts";

const recipient: Address = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const bank = { name: "Ann Lee", account_number: "12345678", routing_number: "021000021" };

describe.each(dialects)("bad input is refused and moves nothing (%s)", (dialect) => {
  let s: TestServer;
  let pg: Awaited<ReturnType<typeof createPgSchema>> | undefined;
  let target: Server;
  let targetUrl: string;
  let targetHits = 0;
  let leaked = "";
  beforeAll(async () => {
    pg = dialect === "postgres" ? await createPgSchema() : undefined;
    s = await startTestServer({ database: dialect, databaseUrl: pg?.url, env: { RATE_LIMIT_PER_MINUTE: "100000" } });
    await s.fund(10_000_000n);
    // A target that would be paid: it must never see a request that carries one of our tokens.
    target = createServer((req, res) => {
      targetHits++;
      // A target that echoes a token it learned elsewhere: its reply must never be stored or returned with it.
      if (req.url === "/leak") return void res.writeHead(200, { "content-type": "application/json", "x-echo": leaked, "x-echo-b64": Buffer.from(leaked).toString("base64") }).end(JSON.stringify({ echo: leaked, note: "kept" }));
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
    await new Promise<void>((r) => target.listen(0, "127.0.0.1", r));
    targetUrl = `http://127.0.0.1:${(target.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((r) => target?.close(r));
    await s?.stop();
    await pg?.drop();
  });

  const send = async (path: string, raw: string) => {
    const res = await fetch(`${s.baseUrl}${path}`, { method: "POST", headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" }, body: raw });
    return { status: res.status, json: (await res.json()) as { detail: string; code: string } & Record<string, unknown> };
  };
  const post = (path: string, body: unknown) => send(path, JSON.stringify(body));
  const payments = () => countRows(s.server.ctx.ledger, "payments");
  /** Runs `fn` and checks that no payment was recorded and the balance did not move. */
  const nothingMoves = async (fn: () => Promise<void>) => {
    const before = { n: await payments(), b: await s.server.ctx.ledger.balances.get(s.projectId) };
    await fn();
    expect(await payments()).toBe(before.n);
    expect(await s.server.ctx.ledger.balances.get(s.projectId)).toEqual(before.b);
  };

  test.each([
    ["a repeated top-level key", `{"recipient":"${recipient}","amount_usd":-1,"amount_usd":0.02}`, /"amount_usd" more than once \(at \$\.amount_usd\)/],
    ["a repeated key inside the bank recipient", `{"recipient":{"name":"A","account_number":"12345678","routing_number":"021000021","name":"B"},"amount_usd":1}`, /"name" more than once \(at \$\.recipient\.name\)/],
    ["the same key spelled with an escape", `{"recipient":"${recipient}","amount_usd":1,"amount_\\u0075sd":2}`, /"amount_usd" more than once/],
  ])("error: a JSON body with %s is refused with duplicate_json_key", async (_name, raw, detail) => {
    await nothingMoves(async () => {
      const r = await send("/v1/pay", raw);
      expect(r).toMatchObject({ status: 400, json: { code: "duplicate_json_key" } });
      expect(r.json.detail).toMatch(detail);
    });
  });

  test("behavior: the same keys in different objects are not duplicates", async () => {
    const r = await post("/v1/pay", { recipient: { ...bank, name: "amount_usd" }, amount_usd: 0.01, description: "name" });
    expect(r.status).toBe(201);
  });

  test("error: an ABA routing number whose check digit does not match is refused; a valid one is accepted", async () => {
    await nothingMoves(async () => {
      for (const [path, body] of [
        ["/v1/pay", { recipient: { ...bank, routing_number: "123456789" }, amount_usd: 1 }],
        ["/v1/payments", { recipient: { ...bank, routing_number: "021000022" }, amount: 100 }],
      ] as const) {
        const r = await post(path, body);
        expect(r.status).toBe(400);
        expect(r.json).toMatchObject({ code: "invalid_request", detail: expect.stringMatching(/routing_number.*not a valid ABA routing number/) });
      }
    });
    expect((await post("/v1/pay", { recipient: bank, amount_usd: 0.01 })).status).toBe(201);
  });

  test("error: one of our tokens in an x402 URL, its query, the proxied body or any other field is refused, never sent or stored", async () => {
    const other = await s.createToken(["read"]);
    const encoded = encodeURIComponent(other).replace(/_/g, "%5F");
    await nothingMoves(async () => {
      for (const [path, body] of [
        ["/v1/pay", { recipient: `${targetUrl}/paid?api_key=${other}` }],
        ["/v1/pay", { recipient: `${targetUrl}/paid?api_key=${encoded}` }],
        ["/v1/pay", { recipient: `${targetUrl}/${other}/paid` }],
        ["/v1/pay", { recipient: `${targetUrl}/paid`, method: "POST", body: JSON.stringify({ token: other }) }],
        ["/v1/pay", { recipient: recipient, amount_usd: 0.01, description: `key ${other}` }],
        ["/v1/x402/pay", { url: `${targetUrl}/paid?t=${other}`, max_amount_usdc: 10_000 }],
      ] as const) {
        const r = await post(path, body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.json.code).toBe("token_in_request");
        expect(r.json.detail).not.toContain(other);
      }
    });
    const keyed = await fetch(`${s.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", "idempotency-key": other }, body: JSON.stringify({ recipient, amount_usd: 0.01 }) });
    expect(keyed.status).toBe(400);
    expect(((await keyed.json()) as { code: string }).code).toBe("token_in_request");
    expect(targetHits).toBe(0);
    // Nothing anywhere in the database carries the token (or any of ours).
    for (const table of ["payments", "transactions", "kv"] as const) {
      const rows = await tableRows(s.server.ctx.ledger, table);
      expect(JSON.stringify(rows)).not.toMatch(/aw_(test|live)_/);
    }
    // The token in the Authorization header of the request itself is of course fine; a clean URL is paid as usual.
    expect((await post("/v1/pay", { recipient: `${targetUrl}/free` })).status).toBe(200);
    expect(targetHits).toBe(1);
  });

  test("error: a token encoded as the target would decode it (JSON escapes, HTML references, base64, percent-encoded four times) is refused, never sent or stored", async () => {
    const other = await s.createToken(["read"]);
    const b64 = (text: string) => Buffer.from(text).toString("base64");
    const fourTimes = [1, 2, 3, 4].reduce((text) => encodeURIComponent(text).replace(/_/g, "%5F"), other);
    const before = targetHits;
    await nothingMoves(async () => {
      for (const body of [
        { recipient: `${targetUrl}/paid`, method: "POST", body: `{"token":"${other.replace(/_/g, "\\u005f")}"}` },
        { recipient: `${targetUrl}/paid`, method: "POST", body: `<input name="t" value="${other.replace(/_/g, "&#95;")}">` },
        { recipient: `${targetUrl}/paid`, headers: { authorization: `Basic ${b64(`agent:${other}`)}` } },
        { recipient: `${targetUrl}/paid?t=${Buffer.from(other).toString("base64url")}` },
        { recipient: `${targetUrl}/paid?t=${fourTimes}` },
        { recipient: recipient, amount_usd: 0.01, description: other.replace(/_/g, "&lowbar;") },
      ]) {
        const r = await post("/v1/pay", body);
        expect(r.status, JSON.stringify(body)).toBe(400);
        expect(r.json.code).toBe("token_in_request");
      }
      // The JSON body itself written with escapes is the same text once parsed.
      const escaped = await send("/v1/pay", `{"recipient":"${targetUrl}/paid","method":"POST","body":"${other.replace(/_/g, "\\u005f")}"}`);
      expect(escaped.json.code).toBe("token_in_request");
    });
    expect(targetHits).toBe(before);
    for (const table of ["payments", "transactions", "kv", "idempotency_keys"] as const) {
      const rows = await tableRows(s.server.ctx.ledger, table);
      expect(JSON.stringify(rows)).not.toContain(other.slice(8));
    }
  });

  test("behavior: a target's reply that echoes a token is returned and stored with the token cut out", async () => {
    leaked = await s.createToken(["read"]);
    const res = await fetch(`${s.baseUrl}/v1/pay`, { method: "POST", headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json", "idempotency-key": "leak-1" }, body: JSON.stringify({ recipient: `${targetUrl}/leak` }) });
    expect(res.status).toBe(200);
    const answer = await res.text();
    expect(answer).not.toContain(leaked.slice(8));
    expect(answer).not.toContain(Buffer.from(leaked).toString("base64").slice(0, 20));
    expect(answer).toContain("kept");
    const stored = JSON.stringify(await tableRows(s.server.ctx.ledger, "idempotency_keys"));
    expect(stored).toContain("kept");
    expect(stored).not.toContain(leaked.slice(8));
    expect(stored).not.toMatch(/aw_(test|live)_/);
  });

  test("error: a usdc_transfer to one of the service's own addresses is refused; another project's wallet is paid and credited there", async () => {
    const chain = s.server.chain!;
    const wallet = (await s.server.ctx.ledger.balances.get(s.projectId))!.wallet_address!;
    const own: [string, string][] = [
      ["the project's own wallet", wallet],
      ["the USDC contract", chain.client.usdcAddress],
      ["the relayer", chain.relayerAddress],
      ["the treasury", chain.treasuryAddress],
      ["the off-ramp", s.server.ctx.rails!.fiatProvider!.depositAddress!],
    ];
    await nothingMoves(async () => {
      for (const [what, address] of own) {
        for (const r of [await post("/v1/pay", { recipient: address, amount_usd: 0.01 }), await post("/v1/usdc/transfer", { to_address: address.toLowerCase(), amount_usdc: 0.01 })]) {
          expect(r.status, what).toBe(400);
          expect(r.json.code, what).toBe("recipient_not_allowed");
        }
      }
    });
    const otherProject = await s.server.ctx.ledger.projects.create({ name: "neighbour", plan: "free" });
    const otherToken = await (async () => {
      const { createToken } = await import("../src/services/tokens.ts");
      return (await createToken(s.server.ctx, { projectId: otherProject.id, permissions: ["read"], mode: "test" })).token;
    })();
    const otherWallet = ((await (await fetch(`${s.baseUrl}/v1/stablecoin/address`, { headers: { authorization: `Bearer ${otherToken}` } })).json()) as { address: string }).address;
    const r = await post("/v1/pay", { recipient: otherWallet, amount_usd: 0.5 });
    expect(r.status).toBe(201);
    await poll("the neighbour's deposit credited", async () => ((await s.server.ctx.ledger.balances.get(otherProject.id))!.total_funded_micros === 500_000 ? true : undefined));
    await poll("the payment completed", async () => ((await s.server.ctx.ledger.payments.getPayment(r.json.id as string))!.status === "completed" ? true : undefined));
    // The paying project's total_funded is untouched by its own payment.
    expect((await s.server.ctx.ledger.balances.get(s.projectId))!.total_funded_micros).toBe(10_000_000);
  });
});

describe("malformed HTTP is answered {detail, code}, never Fastify's own shape", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.stop());

  /** Writes raw bytes to the server and reads its whole answer (the server closes after an error). */
  const raw = (bytes: string) =>
    new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const { hostname, port } = new URL(s.baseUrl);
      const socket = connect(Number(port), hostname, () => socket.end(bytes));
      let data = "";
      socket.setEncoding("latin1");
      socket.setTimeout(10_000, () => socket.destroy(new Error(`no answer to ${JSON.stringify(bytes.slice(0, 80))}`)));
      socket.on("data", (d) => (data += d));
      socket.on("error", reject);
      socket.on("close", () => {
        const [head, ...rest] = data.split("\r\n\r\n");
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head ?? "")?.[1]);
        try {
          resolve({ status, body: JSON.parse(rest.join("\r\n\r\n")) });
        } catch {
          reject(new Error(`not a JSON answer: ${JSON.stringify(data.slice(0, 300))}`));
        }
      });
    });

  test.each([
    ["bad chunking", "POST /v1/pay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n", 400, "malformed_http"],
    ["Content-Length with Transfer-Encoding", "POST /v1/pay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400, "malformed_http"],
    ["a control character in a header", "GET /v1/balance HTTP/1.1\r\nHost: x\r\nX-Probe: a\x01b\r\n\r\n", 400, "malformed_http"],
    ["a header section too large", `GET /v1/balance HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431, "headers_too_large"],
    ["an unknown route", "GET /v1/nothing HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 404, "not_found"],
    ["an HTTP/1.1 request without Host", "GET /v1/balance HTTP/1.1\r\nConnection: close\r\n\r\n", 400, "malformed_http"],
    ["an HTTP/1.1 POST without Host", "POST /v1/pay HTTP/1.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", 400, "malformed_http"],
    ["Content-Encoding gzip on a plain body", `POST /v1/pay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, 415, "unsupported_media_type"],
    ["charset=utf-16", `POST /v1/pay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json; charset=utf-16\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}`, 415, "unsupported_media_type"],
    ["a body that is not JSON", "POST /v1/pay HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{x}", 400, "invalid_request"],
  ])("error: %s", async (_name, bytes, status, code) => {
    const answer = await raw(bytes);
    expect(answer.status).toBe(status);
    expect(Object.keys(answer.body as object).sort()).toEqual(["code", "detail"]);
    expect(answer.body).toMatchObject({ code });
  });
});
