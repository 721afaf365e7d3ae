// The SSRF-safe fetcher against real loopback servers: what it sends, what it returns, and how it fails.
// Live-mode refusals of internal targets are in safeFetch.ssrf.test.ts.

import http from "node:http";
import net from "node:net";
import { afterEach, describe, expect, test } from "vitest";
import { createSafeFetcher, type LookupFunction, type SafeFetchOptions } from "../src/net/safeFetch.ts";
import { SafeFetchError } from "../src/net/safeFetchErrors.ts";

// --- servers ---------------------------------------------------------------------------------------------

type Received = {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
};
type TestServer = { port: number; received: Received[]; connections: () => number; closed: () => number };

const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

/** An HTTP server on 127.0.0.1 that records every request it receives, then runs `respond`. */
async function startHttpServer(
  respond: (request: http.IncomingMessage, response: http.ServerResponse) => void,
): Promise<TestServer> {
  const received: Received[] = [];
  let connections = 0;
  let closed = 0;
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      received.push({
        method: request.method ?? "",
        url: request.url ?? "",
        headers: request.headers,
        rawHeaders: request.rawHeaders,
        body: Buffer.concat(chunks).toString("utf8"),
      });
      respond(request, response);
    });
  });
  server.on("connection", (socket: net.Socket) => {
    connections += 1;
    socket.on("close", () => (closed += 1));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    received,
    connections: () => connections,
    closed: () => closed,
  };
}

/** A TCP server on 127.0.0.1 that hands each socket to `onSocket` (to stall, or to read raw bytes). */
async function startTcpServer(onSocket: (socket: net.Socket) => void): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on("error", () => undefined);
    onSocket(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  cleanups.push(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  return { port: (server.address() as net.AddressInfo).port, connections: () => connections };
}

/** Loopback mode: the sandbox configuration, where local targets are allowed on purpose. */
function loopbackFetcher(options: SafeFetchOptions = {}) {
  return createSafeFetcher({ allowHttp: true, allowPrivateNetworks: true, timeoutMs: 5_000, ...options });
}

async function failure(promise: Promise<unknown>): Promise<SafeFetchError> {
  const outcome = await promise.then(
    () => undefined,
    (error: unknown) => error,
  );
  expect(outcome).toBeInstanceOf(SafeFetchError);
  return outcome as SafeFetchError;
}

/** A resolver for test names, recording each call. */
function fakeLookup(table: Record<string, string[]>) {
  const calls: Array<{ hostname: string; options: unknown }> = [];
  const lookup: LookupFunction = (hostname, options, callback) => {
    calls.push({ hostname, options });
    const addresses = table[hostname];
    if (addresses === undefined) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: "ENOTFOUND" }), []);
      return;
    }
    callback(
      null,
      addresses.map((address) => ({ address, family: net.isIP(address) })),
    );
  };
  return { lookup, calls };
}

// --- success ---------------------------------------------------------------------------------------------

describe("success", () => {
  test("default: a GET returns status, lowercased headers, body and the URL", async () => {
    const server = await startHttpServer((_request, response) => {
      response.setHeader("Content-Type", "application/json");
      response.setHeader("X-Price", "0.01");
      response.setHeader("Set-Cookie", ["a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT", "b=2"]);
      response.end(JSON.stringify({ ok: "✓" }));
    });
    const fetch = loopbackFetcher();

    const response = await fetch({ url: `http://127.0.0.1:${server.port}/quote?x=1#fragment`, method: "GET" });

    expect(response.status).toBe(200);
    expect(response.body).toBe('{"ok":"✓"}');
    expect(response.url).toBe(`http://127.0.0.1:${server.port}/quote?x=1`);
    expect(response.headers["content-type"]).toBe("application/json");
    expect(response.headers["x-price"]).toBe("0.01");
    expect(response.headers["set-cookie"]).toBe("a=1; Expires=Wed, 21 Oct 2037 07:28:00 GMT\nb=2");
    expect(server.received[0]).toMatchObject({ method: "GET", url: "/quote?x=1", body: "" });
  });

  test("behavior: a POST passes its body and content-type through with a recomputed content-length", async () => {
    const server = await startHttpServer((_request, response) => response.writeHead(201).end("created"));
    const fetch = loopbackFetcher();
    const body = JSON.stringify({ prompt: "héllo" });

    const response = await fetch({
      url: `http://127.0.0.1:${server.port}/generate`,
      method: "POST",
      headers: { "Content-Type": "application/json", "Content-Length": "1" },
      body,
    });

    expect(response).toMatchObject({ status: 201, body: "created" });
    expect(server.received[0]).toMatchObject({ method: "POST", url: "/generate", body });
    expect(server.received[0]!.headers["content-type"]).toBe("application/json");
    expect(server.received[0]!.headers["content-length"]).toBe(String(Buffer.byteLength(body)));
  });

  test("behavior: PUT and DELETE are sent with their method", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const fetch = loopbackFetcher();

    await fetch({ url: `http://127.0.0.1:${server.port}/r`, method: "PUT", body: "v" });
    await fetch({ url: `http://127.0.0.1:${server.port}/r`, method: "DELETE" });

    expect(server.received.map((r) => r.method)).toEqual(["PUT", "DELETE"]);
  });

  test("behavior: 4xx and 5xx are responses, not errors (402 above all)", async () => {
    const server = await startHttpServer((_request, response) =>
      response.writeHead(402, { "Payment-Required": "eyJ4NDAy" }).end('{"accepts":[]}'),
    );
    const response = await loopbackFetcher()({ url: `http://127.0.0.1:${server.port}/paid`, method: "GET" });
    expect(response).toMatchObject({ status: 402, body: '{"accepts":[]}' });
    expect(response.headers["payment-required"]).toBe("eyJ4NDAy");
  });
});

// --- headers ---------------------------------------------------------------------------------------------

describe("outgoing headers", () => {
  test("behavior: hop-by-hop, proxy, forwarding and fetcher-owned headers are not forwarded", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const fetch = loopbackFetcher({ userAgent: "agentwallet-test/1" });

    await fetch({
      url: `http://127.0.0.1:${server.port}/`,
      method: "POST",
      body: "hello",
      headers: {
        Connection: "keep-alive, X-Secret-Hop",
        "X-Secret-Hop": "dropped because Connection lists it",
        "Keep-Alive": "timeout=5",
        TE: "trailers",
        Trailer: "X-Checksum",
        "Transfer-Encoding": "chunked",
        Upgrade: "websocket",
        "Proxy-Authorization": "Basic cHJveHk6cHJveHk=",
        "Proxy-Connection": "keep-alive",
        Host: "evil.example",
        "Content-Length": "999",
        Expect: "100-continue",
        "User-Agent": "spoofed",
        "Accept-Encoding": "gzip, br",
        Forwarded: "for=10.0.0.1",
        Via: "1.1 internal-proxy",
        "X-Forwarded-For": "10.0.0.1",
        "X-Forwarded-Host": "admin.internal",
        "X-Real-IP": "10.0.0.1",
        Authorization: "Bearer target-api-key",
        Cookie: "session=target",
        "X-Custom": "kept",
      },
    });

    const headers = server.received[0]!.headers;
    for (const dropped of [
      "x-secret-hop",
      "keep-alive",
      "te",
      "trailer",
      "transfer-encoding",
      "upgrade",
      "proxy-authorization",
      "proxy-connection",
      "expect",
      "forwarded",
      "via",
      "x-forwarded-for",
      "x-forwarded-host",
      "x-real-ip",
    ]) {
      expect(headers[dropped], dropped).toBeUndefined();
    }
    expect(headers.connection).not.toMatch(/secret/i);
    expect(headers.host).toBe(`127.0.0.1:${server.port}`);
    expect(headers["content-length"]).toBe("5");
    expect(headers["user-agent"]).toBe("agentwallet-test/1");
    expect(headers["accept-encoding"]).toBe("identity");
    // The caller's own credentials for the target are the caller's to send.
    expect(headers.authorization).toBe("Bearer target-api-key");
    expect(headers.cookie).toBe("session=target");
    expect(headers["x-custom"]).toBe("kept");
  });

  test("behavior: serviceHeaders add the payment header on the paid retry and win over the caller's", async () => {
    const server = await startHttpServer((_request, response) => response.end("paid"));
    const fetch = loopbackFetcher();

    await fetch(
      { url: `http://127.0.0.1:${server.port}/`, method: "GET", headers: { "X-Custom": "caller" } },
      { serviceHeaders: { "PAYMENT-SIGNATURE": "c2lnbmVk", "X-Custom": "service" } },
    );

    expect(server.received[0]!.headers["payment-signature"]).toBe("c2lnbmVk");
    expect(server.received[0]!.headers["x-custom"]).toBe("service");
  });

  test.each(["X-PAYMENT", "Payment-Signature"])("error: the caller cannot set the x402 header %s", async (name) => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const error = await failure(
      loopbackFetcher()({ url: `http://127.0.0.1:${server.port}/`, method: "GET", headers: { [name]: "forged" } }),
    );
    expect(error.code).toBe("request_invalid");
    expect(error.message).toContain(name.toLowerCase());
    expect(server.connections()).toBe(0);
  });

  test("error: a value that carries an Agent Wallet token is refused without echoing it", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const token = "aw_live_5ecretTokenValue0123456789";
    const error = await failure(
      loopbackFetcher()({
        url: `http://127.0.0.1:${server.port}/`,
        method: "GET",
        headers: { Authorization: `Bearer ${token}` },
      }),
    );
    expect(error.code).toBe("request_invalid");
    expect(error.message).not.toContain(token);
    expect(server.connections()).toBe(0);
  });

  test.each([
    ["a CR/LF in a value", { "X-Note": "a\r\nX-Injected: 1" }],
    ["a bare LF in a value", { "X-Note": "a\nb" }],
    ["a NUL in a value", { "X-Note": "a\u0000b" }],
    ["a CR/LF in a name", { "X-Note\r\nX-Injected": "1" }],
    ["a space in a name", { "X Note": "1" }],
    ["an empty name", { "": "1" }],
    ["the same name twice", { Accept: "a", accept: "b" }],
  ])("error: %s is request_invalid and nothing is dialled", async (_label, headers) => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const error = await failure(
      loopbackFetcher()({ url: `http://127.0.0.1:${server.port}/`, method: "GET", headers }),
    );
    expect(error.code).toBe("request_invalid");
    expect(error.message).not.toMatch(/X-Injected|a\r|a\n/);
    expect(server.connections()).toBe(0);
  });

  test("error: more headers than maxHeaderCount, or more bytes than maxHeaderBytes, are refused", async () => {
    const fetch = loopbackFetcher({ maxHeaderCount: 3, maxHeaderBytes: 64 });
    const url = "http://127.0.0.1:9/";
    const many = { a: "1", b: "2", c: "3", d: "4" };
    const big = { "X-Big": "x".repeat(100) };

    expect((await failure(fetch({ url, method: "GET", headers: many }))).message).toContain("limit is 3");
    expect((await failure(fetch({ url, method: "GET", headers: big }))).message).toContain("limit is 64");
  });
});

// --- request shape ---------------------------------------------------------------------------------------

describe("request shape", () => {
  const url = "http://127.0.0.1:9/";

  test.each([
    ["a GET with a body", { url, method: "GET", body: "x" }],
    ["an unknown method", { url, method: "PATCH" }],
    ["a lowercase method", { url, method: "get" }],
    ["a body that is not a string", { url, method: "POST", body: { a: 1 } }],
    ["headers that are not an object", { url, method: "GET", headers: "X-A: 1" }],
  ])("error: %s is request_invalid", async (_label, request) => {
    const error = await failure(loopbackFetcher()(request as never));
    expect(error.code).toBe("request_invalid");
  });

  test("error: a body over maxRequestBodyBytes is request_invalid, counted in UTF-8 bytes", async () => {
    const fetch = loopbackFetcher({ maxRequestBodyBytes: 10 });
    const error = await failure(fetch({ url, method: "POST", body: "ééééé" + "é" }));
    expect(error).toMatchObject({ code: "request_invalid" });
    expect(error.message).toBe("The request body is 12 bytes; the limit is 10 bytes.");
  });

  test("error: a URL over maxUrlLength is url_invalid", async () => {
    const fetch = loopbackFetcher({ maxUrlLength: 40 });
    const error = await failure(fetch({ url: `${url}${"a".repeat(40)}`, method: "GET" }));
    expect(error).toMatchObject({ code: "url_invalid" });
    expect(error.message).toContain("limit is 40");
  });

  test("error: invalid limits fail at construction", () => {
    expect(() => createSafeFetcher({ timeoutMs: 0 })).toThrow(TypeError);
    expect(() => createSafeFetcher({ maxResponseBytes: 1.5 })).toThrow(TypeError);
    expect(() => createSafeFetcher({ userAgent: "a\r\nb" })).toThrow(TypeError);
  });
});

// --- redirects -------------------------------------------------------------------------------------------

describe("redirects", () => {
  test.each([301, 302, 303, 307, 308])("behavior: a %i is returned and its Location is never dialled", async (status) => {
    const second = await startTcpServer((socket) => socket.destroy());
    const first = await startHttpServer((_request, response) =>
      response.writeHead(status, { Location: `http://127.0.0.1:${second.port}/internal` }).end("moved"),
    );
    const fetch = loopbackFetcher();

    const response = await fetch(
      { url: `http://127.0.0.1:${first.port}/`, method: "POST", body: "{}" },
      { serviceHeaders: { "X-PAYMENT": "signed-payload" } },
    );

    expect(response.status).toBe(status);
    expect(response.headers.location).toBe(`http://127.0.0.1:${second.port}/internal`);
    expect(response.url).toBe(`http://127.0.0.1:${first.port}/`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(second.connections()).toBe(0);
  });
});

// --- deadline and size -----------------------------------------------------------------------------------

describe("limits", () => {
  test("error: a server that never answers is a timeout within the deadline", async () => {
    const server = await startTcpServer(() => undefined);
    const fetch = loopbackFetcher({ timeoutMs: 300 });
    const startedAt = Date.now();

    const error = await failure(fetch({ url: `http://127.0.0.1:${server.port}/`, method: "GET" }));

    const elapsedMs = Date.now() - startedAt;
    expect(error.code).toBe("timeout");
    expect(error.message).toBe(`The request to 127.0.0.1:${server.port} did not complete within 300 ms.`);
    expect(error.requestMayHaveBeenSent).toBe(true);
    expect(elapsedMs).toBeGreaterThanOrEqual(280);
    expect(elapsedMs).toBeLessThan(1_500);
  });

  test("error: a body that stalls after the headers is a timeout; the deadline covers the body too", async () => {
    const server = await startHttpServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "text/plain" });
      response.write("partial");
    });
    const fetch = loopbackFetcher({ timeoutMs: 300 });
    const startedAt = Date.now();

    const error = await failure(fetch({ url: `http://127.0.0.1:${server.port}/`, method: "GET" }));

    expect(error.code).toBe("timeout");
    expect(Date.now() - startedAt).toBeLessThan(1_500);
  });

  test("error: a DNS lookup that never answers is a timeout, and nothing was sent", async () => {
    const never: LookupFunction = () => undefined;
    const fetch = loopbackFetcher({ timeoutMs: 200, lookup: never });

    const error = await failure(fetch({ url: "http://stuck.test/", method: "GET" }));

    expect(error).toMatchObject({ code: "timeout", requestMayHaveBeenSent: false });
    expect(error.message).toBe("The DNS lookup of stuck.test did not finish within 200 ms.");
  });

  test("error: a streamed body over the cap is response_too_large and the connection is torn down", async () => {
    const chunk = Buffer.alloc(16_384, "x");
    let stopped = false;
    const server = await startHttpServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/octet-stream" });
      const pump = (): void => {
        // Writes until the client goes away; a fetcher that kept reading would never return.
        while (!stopped && !response.destroyed && response.write(chunk)) {
          // keep filling the buffer
        }
        if (!stopped && !response.destroyed) response.once("drain", pump);
      };
      response.on("close", () => (stopped = true));
      pump();
    });
    const fetch = loopbackFetcher({ maxResponseBytes: 65_536, timeoutMs: 5_000 });

    const error = await failure(fetch({ url: `http://127.0.0.1:${server.port}/big`, method: "GET" }));

    expect(error).toMatchObject({ code: "response_too_large", status: 200, requestMayHaveBeenSent: true });
    expect(error.message).toBe(
      `The response body from 127.0.0.1:${server.port} is larger than 65536 bytes; the limit is 65536 bytes.`,
    );
    await expect.poll(() => server.closed(), { timeout: 2_000 }).toBe(1);
  });

  test("error: a declared Content-Length over the cap fails before the body is read", async () => {
    const server = await startHttpServer((_request, response) => {
      response.writeHead(200, { "Content-Length": "2000000" });
      response.write("x");
    });
    const fetch = loopbackFetcher({ maxResponseBytes: 1_000 });

    const error = await failure(fetch({ url: `http://127.0.0.1:${server.port}/`, method: "GET" }));

    expect(error.code).toBe("response_too_large");
    expect(error.message).toContain("declares 2000000 bytes");
  });

  test("behavior: a body of exactly the cap is accepted", async () => {
    const server = await startHttpServer((_request, response) => response.end("y".repeat(1_000)));
    const response = await loopbackFetcher({ maxResponseBytes: 1_000 })({
      url: `http://127.0.0.1:${server.port}/`,
      method: "GET",
    });
    expect(response.body.length).toBe(1_000);
  });

  test("error: response headers over maxResponseHeaderBytes are response_too_large", async () => {
    const server = await startHttpServer((_request, response) =>
      response.writeHead(200, { "X-Huge": "h".repeat(4_000) }).end("ok"),
    );
    const error = await failure(
      loopbackFetcher({ maxResponseHeaderBytes: 1_024 })({ url: `http://127.0.0.1:${server.port}/`, method: "GET" }),
    );
    expect(error.code).toBe("response_too_large");
  });
});

// --- DNS and pinning -------------------------------------------------------------------------------------

describe("DNS and pinning", () => {
  test("error: a name resolving to loopback is refused in live mode, and nothing is dialled", async () => {
    const server = await startHttpServer((_request, response) => response.end("internal"));
    const { lookup, calls } = fakeLookup({ "pinned.test": ["127.0.0.1"] });
    const fetch = createSafeFetcher({ allowHttp: true, allowPrivateNetworks: false, lookup });

    const error = await failure(fetch({ url: `http://pinned.test:${server.port}/`, method: "GET" }));

    expect(error.code).toBe("host_not_allowed");
    expect(error.message).toBe(
      "The target host pinned.test resolves to 127.0.0.1 (loopback). Only public internet addresses can be requested.",
    );
    expect(calls).toEqual([{ hostname: "pinned.test", options: { all: true } }]);
    expect(server.connections()).toBe(0);
  });

  test("behavior: with private networks allowed, the name dials the address it resolved to, once", async () => {
    const server = await startHttpServer((_request, response) => response.end("internal"));
    const { lookup, calls } = fakeLookup({ "pinned.test": ["127.0.0.1", "127.0.0.2"] });
    const fetch = loopbackFetcher({ lookup });

    const response = await fetch({ url: `http://pinned.test:${server.port}/path`, method: "GET" });

    expect(response).toMatchObject({ status: 200, body: "internal", url: `http://pinned.test:${server.port}/path` });
    expect(server.received[0]!.headers.host).toBe(`pinned.test:${server.port}`);
    expect(calls).toHaveLength(1);
  });

  test("behavior: https dials the pinned address and still sends the host name as TLS SNI", async () => {
    let clientHello = Buffer.alloc(0);
    const server = await startTcpServer((socket) => {
      socket.on("data", (data: Buffer) => {
        clientHello = Buffer.concat([clientHello, data]);
        socket.destroy();
      });
    });
    const { lookup } = fakeLookup({ "merchant.test": ["127.0.0.1"] });
    const fetch = loopbackFetcher({ lookup });

    const error = await failure(fetch({ url: `https://merchant.test:${server.port}/`, method: "GET" }));

    expect(server.connections()).toBe(1);
    expect(clientHello[0]).toBe(0x16); // a TLS handshake record
    expect(clientHello.includes(Buffer.from("merchant.test"))).toBe(true);
    expect(error).toMatchObject({ code: "connect_failed", requestMayHaveBeenSent: false });
  });

  test("error: a name that does not resolve is dns_failed", async () => {
    const { lookup } = fakeLookup({});
    const error = await failure(loopbackFetcher({ lookup })({ url: "https://nowhere.test/", method: "GET" }));
    expect(error).toMatchObject({ code: "dns_failed", requestMayHaveBeenSent: false });
    expect(error.message).toBe("The host name nowhere.test did not resolve (ENOTFOUND).");
  });

  test("error: a name that resolves to no address is dns_failed", async () => {
    const { lookup } = fakeLookup({ "empty.test": [] });
    const error = await failure(loopbackFetcher({ lookup })({ url: "https://empty.test/", method: "GET" }));
    expect(error.code).toBe("dns_failed");
  });

  test("error: a refused port is connect_failed and nothing was sent", async () => {
    const probe = await startTcpServer(() => undefined);
    const port = probe.port;
    await cleanups.pop()!();

    const error = await failure(loopbackFetcher()({ url: `http://127.0.0.1:${port}/`, method: "GET" }));

    expect(error).toMatchObject({ code: "connect_failed", requestMayHaveBeenSent: false });
    expect(error.message).toBe(`Could not connect to 127.0.0.1:${port} (ECONNREFUSED).`);
  });

  test("error: a server that drops the connection mid-response is connect_failed after sending", async () => {
    const server = await startTcpServer((socket) => {
      socket.once("data", () => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nshort"));
    });
    const error = await failure(loopbackFetcher()({ url: `http://127.0.0.1:${server.port}/`, method: "GET" }));
    expect(error).toMatchObject({ code: "connect_failed", requestMayHaveBeenSent: true });
  });
});

// --- kept and prepared connections ----------------------------------------------------------------------

describe("connections", () => {
  test("default: every request without reuseConnection dials a fresh connection and closes it", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const fetch = loopbackFetcher();
    const url = `http://127.0.0.1:${server.port}/`;
    for (let i = 0; i < 3; i++) expect((await fetch({ url, method: "GET" })).body).toBe("ok");
    expect(server.connections()).toBe(3);
    await expect.poll(() => server.closed(), { timeout: 2_000 }).toBe(3);
  });

  test("behavior: reuseConnection keeps connections to an origin, at most 4 of them", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const fetch = loopbackFetcher();
    const url = `http://127.0.0.1:${server.port}/`;
    for (let i = 0; i < 6; i++) expect((await fetch({ url, method: "GET" }, { reuseConnection: true })).status).toBe(200);
    expect(server.received).toHaveLength(6);
    expect(server.connections()).toBeLessThanOrEqual(2);
    await Promise.all(Array.from({ length: 12 }, () => fetch({ url, method: "GET" }, { reuseConnection: true })));
    expect(server.received).toHaveLength(18);
    expect(server.connections()).toBeLessThanOrEqual(4);
  });

  test("behavior: the deadline of a request over a kept connection starts when a connection is free, not while it waits for one", async () => {
    // 12 at once over 4 connections to a server answering in 40 % of the deadline: three rounds, the last
    // ending at 120 % of the deadline from the start, none late from when it was sent.
    const server = await startHttpServer((_request, response) => void setTimeout(() => response.end("ok"), 400));
    const fetch = loopbackFetcher({ timeoutMs: 1_000, connectionWaitMs: 5_000 });
    const url = `http://127.0.0.1:${server.port}/`;
    const answers = await Promise.allSettled(Array.from({ length: 12 }, () => fetch({ url, method: "GET" }, { reuseConnection: true })));
    expect(answers.map((a) => (a.status === "fulfilled" ? a.value.status : String((a.reason as Error).message)))).toEqual(Array.from({ length: 12 }, () => 200));
    expect(server.received).toHaveLength(12);
    expect(server.connections()).toBeLessThanOrEqual(4);
  });

  test("error: a request that finds no free kept connection within connectionWaitMs fails unsent", async () => {
    const server = await startHttpServer(() => undefined);
    const fetch = loopbackFetcher({ timeoutMs: 2_000, connectionWaitMs: 200 });
    const url = `http://127.0.0.1:${server.port}/`;
    const busy = Array.from({ length: 4 }, () => fetch({ url, method: "GET" }, { reuseConnection: true }).catch((e: unknown) => e));
    const error = await failure(fetch({ url, method: "GET" }, { reuseConnection: true }));
    expect([error.code, error.requestMayHaveBeenSent, error.message]).toEqual(["timeout", false, expect.stringContaining("No connection to 127.0.0.1")]);
    await expect.poll(() => server.received.length).toBe(4);
    await Promise.all(busy);
  });

  test("behavior: a kept connection is never used for a name that now resolves to another address", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const table: Record<string, string[]> = { "moving.test": ["127.0.0.1"] };
    const { lookup } = fakeLookup(table);
    const fetch = loopbackFetcher({ lookup });
    const url = `http://moving.test:${server.port}/`;
    await fetch({ url, method: "GET" }, { reuseConnection: true });
    table["moving.test"] = ["127.0.0.2"];
    await fetch({ url, method: "GET" }, { reuseConnection: true }).catch(() => undefined);
    // The second request dialled 127.0.0.2 (nothing listens there on Linux' 127/8 unless bound: the
    // server is bound to 127.0.0.1 only), so the server saw one connection and one request.
    expect(server.connections()).toBe(1);
    expect(server.received).toHaveLength(1);
  });

  test("error: an over-size reply on a kept connection tears that connection down", async () => {
    const chunk = Buffer.alloc(16_384, "x");
    const server = await startHttpServer((_request, response) => {
      response.writeHead(200, { "Content-Type": "application/octet-stream" });
      const pump = (): void => {
        while (!response.destroyed && response.write(chunk)) {
          // keep filling the buffer
        }
        if (!response.destroyed) response.once("drain", pump);
      };
      pump();
    });
    const fetch = loopbackFetcher({ maxResponseBytes: 65_536 });
    const error = await failure(fetch({ url: `http://127.0.0.1:${server.port}/big`, method: "GET" }, { reuseConnection: true }));
    expect(error.code).toBe("response_too_large");
    await expect.poll(() => server.closed(), { timeout: 2_000 }).toBe(1);
  });

  test("error: a kept-connection request to a refused port says it could not connect", async () => {
    const probe = await startTcpServer(() => undefined);
    const port = probe.port;
    await cleanups.pop()!();
    const error = await failure(loopbackFetcher()({ url: `http://127.0.0.1:${port}/`, method: "GET" }, { reuseConnection: true }));
    expect(error.code).toBe("connect_failed");
    expect(error.message).toBe(`Could not connect to 127.0.0.1:${port} (ECONNREFUSED).`);
  });

  test("behavior: prepare dials before the request exists; send uses that fresh connection once", async () => {
    const server = await startHttpServer((request, response) => response.end(`paid ${request.headers["payment-signature"] ?? ""}`));
    const fetch = loopbackFetcher();
    const url = `http://127.0.0.1:${server.port}/paid`;
    await fetch({ url, method: "GET" }, { reuseConnection: true });
    const prepared = fetch.prepare(url);
    await expect.poll(() => server.connections(), { timeout: 2_000 }).toBe(2);
    expect(server.received).toHaveLength(1);

    const response = await prepared.send({ url, method: "GET" }, { serviceHeaders: { "payment-signature": "sig" } });
    expect(response.body).toBe("paid sig");
    // The paid request went over the connection dialled for it, not the kept one, and that one is closed.
    expect(server.connections()).toBe(2);
    await expect.poll(() => server.closed(), { timeout: 2_000 }).toBe(1);
    await expect(prepared.send({ url, method: "GET" })).rejects.toThrow("this prepared request is used");
  });

  test("error: a prepared connection that could not be dialled fails the send with nothing sent", async () => {
    const probe = await startTcpServer(() => undefined);
    const port = probe.port;
    await cleanups.pop()!();
    const url = `http://127.0.0.1:${port}/paid`;
    const error = await failure(loopbackFetcher().prepare(url).send({ url, method: "GET" }));
    expect(error).toMatchObject({ code: "connect_failed", requestMayHaveBeenSent: false });
  });

  test("error: a prepared connection the target closed before the send fails with nothing sent", async () => {
    const server = await startTcpServer((socket) => socket.destroy());
    const url = `http://127.0.0.1:${server.port}/paid`;
    const prepared = loopbackFetcher().prepare(url);
    await expect.poll(() => server.connections(), { timeout: 2_000 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const error = await failure(prepared.send({ url, method: "GET" }));
    expect(error).toMatchObject({ code: "connect_failed", requestMayHaveBeenSent: false });
  });

  test("behavior: close drops a prepared connection unused", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const url = `http://127.0.0.1:${server.port}/`;
    const prepared = loopbackFetcher().prepare(url);
    await expect.poll(() => server.connections(), { timeout: 2_000 }).toBe(1);
    prepared.close();
    await expect.poll(() => server.closed(), { timeout: 2_000 }).toBe(1);
    expect(server.received).toHaveLength(0);
    await expect(prepared.send({ url, method: "GET" })).rejects.toThrow("this prepared request is closed");
  });

  test("error: a prepared connection serves only its own origin", async () => {
    const a = await startHttpServer((_request, response) => response.end("a"));
    const b = await startHttpServer((_request, response) => response.end("b"));
    const prepared = loopbackFetcher().prepare(`http://127.0.0.1:${a.port}/`);
    await expect(prepared.send({ url: `http://127.0.0.1:${b.port}/`, method: "GET" })).rejects.toThrow("cannot serve");
    expect(b.received).toHaveLength(0);
  });
});

// --- messages --------------------------------------------------------------------------------------------

describe("error messages", () => {
  test("behavior: never contain request header values, the body, or the URL's path and query", async () => {
    const secret = "s3cr3t-value";
    const headers = { Authorization: `Bearer ${secret}`, "X-Api-Key": secret };
    const liveFetch = createSafeFetcher({ allowHttp: true, allowPrivateNetworks: false });
    const stalled = await startTcpServer(() => undefined);
    const errors = [
      await failure(liveFetch({ url: `https://127.0.0.1/${secret}?key=${secret}`, method: "GET", headers })),
      await failure(liveFetch({ url: `https://[::1${secret}/`, method: "GET", headers })),
      await failure(liveFetch({ url: `ftp://example.com/?key=${secret}`, method: "GET", headers })),
      await failure(
        loopbackFetcher({ timeoutMs: 100 })({
          url: `http://127.0.0.1:${stalled.port}/?key=${secret}`,
          method: "POST",
          headers,
          body: secret,
        }),
      ),
    ];
    expect(errors.map((e) => e.code)).toEqual(["host_not_allowed", "url_invalid", "scheme_not_allowed", "timeout"]);
    for (const error of errors) {
      expect(error.message).not.toContain(secret);
      expect(JSON.stringify(error)).not.toContain(secret);
      expect(error.toJSON()).toEqual({ detail: error.message, code: error.code });
    }
  });
});

describe("odd but valid input", () => {
  test("behavior: an IPv6 literal is dialled as-is in loopback mode", async (context) => {
    const server = http.createServer((_request, response) => response.end("v6"));
    const listening = await new Promise<boolean>((resolve) => {
      server.once("error", () => resolve(false));
      server.listen(0, "::1", () => resolve(true));
    });
    if (!listening) context.skip("no IPv6 loopback on this machine");
    cleanups.push(async () => {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    });
    const port = (server.address() as net.AddressInfo).port;

    const response = await loopbackFetcher()({ url: `http://[::1]:${port}/`, method: "GET" });

    expect(response).toMatchObject({ status: 200, body: "v6", url: `http://[::1]:${port}/` });
  });

  test("behavior: a caller header named __proto__ is forwarded as a header", async () => {
    const server = await startHttpServer((_request, response) => response.end("ok"));
    const headers = JSON.parse('{"__proto__": "p", "X-Other": "o"}') as Record<string, string>;

    await loopbackFetcher()({ url: `http://127.0.0.1:${server.port}/`, method: "GET", headers });

    // Node's parsed `headers` object cannot hold that name either, so the raw list is the witness.
    expect(server.received[0]!.rawHeaders.join("\n")).toMatch(/^__proto__\np$/im);
    expect(server.received[0]!.headers["x-other"]).toBe("o");
  });
});
