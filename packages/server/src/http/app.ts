/**
 * The HTTP app: routes, authentication, rate limit and error mapping. `createApp` builds it and
 * never listens (only main/serve does), so tests drive it with `app.inject()` or a real port.
 */
import { randomUUID } from "node:crypto";
import { STATUS_CODES } from "node:http";
import type { Duplex } from "node:stream";
import { buildOpenApiDocument, limits } from "@agentwallet/api";
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyServerOptions } from "fastify";
import type { Config } from "../config.ts";
import type { HttpDeps } from "./httpDeps.ts";
import { getLimits } from "../services/spendingControls.ts";
import { getBalance } from "../services/getBalance.ts";
import { getDepositAddress } from "../services/getDepositAddress.ts";
import { getEvidence } from "../services/evidence/getEvidence.ts";
import { getTransaction } from "../services/getTransaction.ts";
import { listTransactions } from "../services/listTransactions.ts";
import { principalOf, tokenAuth } from "./auth.ts";
import { DomainError, badRequest } from "../domain/errors.ts";
import type { ErrorCode } from "../domain/errorCodes.ts";
import type { StoreOverload } from "../ledger/overload.ts";
import { ApiError, errorBody } from "./apiError.ts";
import { statusOf } from "./errorStatus.ts";
import { parseListQuery } from "./listQuery.ts";
import type { Metrics } from "./metrics.ts";
import { registerJsonBodyParser } from "./jsonBody.ts";
import { refuseAtTheEdge } from "./requestEdges.ts";
import { registerPaymentRoutes } from "./paymentRoutes.ts";
import { registerWebhookRoutes } from "./webhookRoutes.ts";
import { registerAdminRoutes } from "./adminRoutes.ts";
import { registerTokenRoutes } from "./tokenRoutes.ts";
import { registerAdminWebhookRoutes } from "./adminWebhookRoutes.ts";
import { type ConsoleAppOptions, registerConsoleRoutes } from "./console.ts";

export type CreateAppOptions = { metrics: Metrics; bodyLimitBytes?: number; console?: ConsoleAppOptions };

export function createApp(ctx: HttpDeps, options: CreateAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: ctx.logger,
    bodyLimit: options.bodyLimitBytes ?? 2 * 1024 * 1024,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[\w.:-]{1,64}$/.test(given) ? given : randomUUID();
    },
    // Our own onResponse hook logs one line per request, without headers.
    logController: new LogController({ requestIdLogLabel: "request_id", disableRequestLogging: true }),
    // Every answer is `{detail, code}`, Fastify's own included: a request the HTTP parser refuses (bad
    // chunking, Content-Length with Transfer-Encoding, control characters, a head too large, a timeout),
    // a malformed URL, and a request while closing (answered by the onRequest hook below).
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, _req, reply: FastifyReply) => {
      reply.code(400).send(errorBody("malformed_http", `Malformed request: ${err.code === "FST_ERR_BAD_URL" ? "the URL is not valid (bad percent-encoding)" : err.message}.`));
    },
    return503OnClosing: false,
    // The client's address and protocol (sign-in limits, logs, the Secure cookie) as the trusted proxies report them.
    trustProxy: trustProxyOption(ctx.config.trustProxy),
    // A missing Host is answered by the onRequest hook (requestEdges.ts) in our shape, not by Node with an empty 400.
    http: { requireHostHeader: false },
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
  });
  let closing = false;
  app.addHook("preClose", (done) => {
    closing = true;
    done();
  });
  const { metrics } = options;
  // The API speaks JSON only: anything else is a 415 with a clear detail. Duplicate keys and our own
  // tokens in a body are refused (jsonBody.ts).
  app.removeContentTypeParser("text/plain");
  registerJsonBodyParser(app as unknown as FastifyInstance);

  // Callback-style hooks: an async one costs a promise and a microtask hop on every request.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    if (closing) {
      reply.code(503).header("connection", "close").send(errorBody("shutting_down", "The server is shutting down; retry in a moment (or on another instance)."));
      return;
    }
    const refused = refuseAtTheEdge(req.raw.httpVersion, req.headers);
    if (refused) {
      reply.code(refused.status).header("connection", "close").send(errorBody(refused.code, refused.detail));
      return;
    }
    done();
  });
  // Histogram children by (method, route, status), looked up once: labels() hashes on every call.
  const durations = new Map<string, { observe(v: number): void }>();
  app.addHook("onResponse", (req, reply, done) => {
    const route = req.routeOptions.url ?? "unknown";
    const key = `${req.method} ${route} ${reply.statusCode}`;
    let child = durations.get(key);
    if (!child) durations.set(key, (child = metrics.httpDuration.labels(req.method, route, String(reply.statusCode))));
    const ms = reply.elapsedTime;
    child.observe(ms / 1000);
    // One line per request; the Authorization header is never part of it.
    if (ctx.logger.isLevelEnabled("info")) req.log.info({ method: req.method, route, status: reply.statusCode, ms: Math.round(ms * 10) / 10, client_ip: req.ip, token_id: req.principal?.tokenId, admin_id: req.admin?.id }, "request");
    done();
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
      return reply.code(err.status).send({ detail: err.detail, code: err.code });
    }
    if (err instanceof DomainError) return reply.code(statusOf(err)).send({ ...err.extra, detail: err.detail, code: err.code });
    const fe = err as { statusCode?: number; code?: string; message?: string };
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      // Fastify's own client errors: bad JSON, wrong content type, body too large.
      const detail =
        fe.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" ? "Content-Type must be application/json (UTF-8)."
        : fe.code === "FST_ERR_CTP_BODY_TOO_LARGE" ? "Request body is too large."
        : fe.code === "FST_ERR_CTP_EMPTY_JSON_BODY" ? "Request body is empty; send a JSON object."
        : `Malformed request: ${fe.message ?? "invalid"}`;
      return reply.code(fe.statusCode).send(errorBody(fe.statusCode === 415 ? "unsupported_media_type" : "invalid_request", detail));
    }
    // The database at capacity is no fault: the request did nothing there, and may be sent again.
    const overload = ctx.ledger.overloadOf(err);
    if (overload) {
      req.log.warn({ err, overload }, "database at capacity");
      return reply.code(503).header("retry-after", String(SERVICE_BUSY_RETRY_AFTER_S)).send(errorBody("service_busy", serviceBusyDetail(overload, req.id)));
    }
    req.log.error({ err }, "unhandled error");
    return reply.code(500).send(errorBody("internal_error", `Internal error. Nothing was charged by this failure unless GET /v1/transactions shows it. Request id: ${req.id}.`));
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send(errorBody("not_found", `No route ${req.method} ${req.url.split("?")[0]}. See GET /openapi.json for the API.`));
  });

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) => {
    try {
      await ctx.ledger.ping();
      // Requests are served while settlement starts; payments accepted meanwhile settle once it runs.
      const settlement = ctx.hooks.settlementRunning?.();
      return settlement === undefined ? { status: "ready" } : { status: "ready", settlement: settlement ? "running" : "starting" };
    } catch (err) {
      ctx.logger.warn({ err }, "readiness check failed");
      return reply.code(503).send(errorBody("not_ready", "Database unavailable."));
    }
  });
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  // `servers` is PUBLIC_BASE_URL, or else the address the server listens on (known once it listens).
  let openapi: { url: string; doc: Record<string, unknown> } | undefined;
  app.get("/openapi.json", async () => {
    const url = ctx.config.publicBaseUrl ?? listeningOrigin(app) ?? "/";
    if (openapi?.url !== url) openapi = { url, doc: buildOpenApiDocument(url) };
    return openapi.doc;
  });

  const asReader = { preHandler: tokenAuth(ctx, "read") };
  app.get("/v1/balance", asReader, async (req) => {
    const p = principalOf(req);
    return getBalance(p);
  });
  // The calling token's spending controls (and its project's), with spent and remaining per window.
  app.get("/v1/limits", asReader, async (req) => {
    const p = principalOf(req);
    return getLimits(ctx, p);
  });
  app.get("/v1/stablecoin/address", asReader, async (req) => {
    const p = principalOf(req);
    return getDepositAddress(ctx, p.projectId);
  });
  app.get("/v1/transactions", asReader, async (req) => {
    const p = principalOf(req);
    const { startingAfter, ...q } = parseListQuery(req.query);
    const cursor = startingAfter === undefined ? undefined : await ctx.ledger.transactions.cursorOf(p.projectId, startingAfter);
    if (startingAfter !== undefined && !cursor) {
      throw badRequest("invalid_query", `Query parameter 'starting_after' names no transaction of this project ("${startingAfter.slice(0, 80)}"); give the id of the last transaction of the previous page.`);
    }
    return listTransactions(ctx, p.projectId, { ...q, cursor });
  });
  app.get<{ Params: { id: string } }>("/v1/transactions/:id", asReader, async (req) => {
    const p = principalOf(req);
    return getTransaction(ctx.ledger, p.projectId, req.params.id);
  });
  app.get<{ Params: { id: string } }>("/v1/transactions/:id/evidence", asReader, async (req) => {
    const p = principalOf(req);
    return getEvidence(ctx.ledger, p.projectId, req.params.id);
  });

  registerPaymentRoutes(app as unknown as FastifyInstance, ctx, metrics);
  registerWebhookRoutes(app as unknown as FastifyInstance, ctx);
  registerAdminRoutes(app as unknown as FastifyInstance, ctx);
  registerTokenRoutes(app as unknown as FastifyInstance, ctx);
  registerAdminWebhookRoutes(app as unknown as FastifyInstance, ctx);
  registerConsoleRoutes(app as unknown as FastifyInstance, ctx, options.console ?? {});
  return app as unknown as FastifyInstance;
}

/**
 * Retry-After of a `service_busy` answer. The request already waited its database's whole wait (the pool's, or
 * SQLite's busy timeout); a burst's queue drains within moments, and a pause spreads the retries over them.
 */
const SERVICE_BUSY_RETRY_AFTER_S = 2;

const OVERLOAD_CAUSE: Readonly<Record<StoreOverload, string>> = {
  pool_exhausted: "no database connection came free in time",
  connections_refused: "the database refused another connection",
  write_locked: "another writer held the database past its busy timeout",
};

/** The detail of a `service_busy` answer: temporary, and the same key is safe to send again (ledger/overload.ts says why). */
function serviceBusyDetail(overload: StoreOverload, requestId: string): string {
  return (
    `The service is at capacity (${OVERLOAD_CAUSE[overload]}); this is temporary. Retry in ${SERVICE_BUSY_RETRY_AFTER_S} s with the same idempotency_key: ` +
    `a payment this request made is answered, never made twice. Without an idempotency key, check GET /v1/transactions before sending it again. Request id: ${requestId}.`
  );
}

/**
 * TRUST_PROXY as Fastify takes it. A hop count becomes proxy-addr's own rule (the first `hops` addresses from
 * the socket are proxies): Fastify 5 no longer applies a bare number to the client's address.
 */
function trustProxyOption(trust: Config["trustProxy"]): FastifyServerOptions["trustProxy"] {
  if (trust === false) return false;
  if (typeof trust === "number") return (_address: string, hop: number) => hop < trust;
  return [...trust];
}

/**
 * Node's HTTP parser refused the request (Fastify's `clientErrorHandler`): answer `{detail, code}` and close,
 * as Fastify's default does with its own shape. Nothing reached a route, so nothing moved.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === "ECONNRESET" || socket.destroyed) return;
  const [status, code, detail]: [number, ErrorCode, string] =
    err.code === "HPE_HEADER_OVERFLOW" ? [431, "headers_too_large", "The request head (request line and headers) is too large; send fewer or shorter headers."]
    : err.code === "ERR_HTTP_REQUEST_TIMEOUT" ? [408, "request_timeout", "The request was not received in time; send it again."]
    : [400, "malformed_http", `Malformed HTTP request (${describeParseError(err.code)}); nothing was done. Send a well-formed HTTP/1.1 request.`];
  const body = JSON.stringify(errorBody(code, detail));
  if (socket.writable) {
    socket.write(`HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  }
  socket.destroy();
}

function describeParseError(code: string | undefined): string {
  switch (code) {
    case "HPE_INVALID_CHUNK_SIZE":
      return "invalid chunked encoding";
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return "Content-Length together with Transfer-Encoding";
    case "HPE_INVALID_HEADER_TOKEN":
      return "a header name or value with characters not allowed, such as control characters";
    case "HPE_INVALID_METHOD":
      return "unknown method";
    default:
      return code ? code.toLowerCase().replace(/^hpe_/, "").replaceAll("_", " ") : "unreadable";
  }
}

/** `http://127.0.0.1:8787` once the app listens; undefined before (requests injected in tests). */
function listeningOrigin(app: { readonly listeningOrigin: string }): string | undefined {
  try {
    return app.listeningOrigin;
  } catch {
    return undefined;
  }
}
