/**
 * The HTTP app: routes, authentication, rate limit and error mapping. `createApp` builds it and
 * never listens (only main/serve does), so tests drive it with `app.inject()` or a real port.
 */
import { randomUUID } from "node:crypto";
import { buildOpenApiDocument, limits } from "@agentwallet/api";
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from "fastify";
import { sql } from "kysely";
import type { AppContext } from "../context.ts";
import { getBalance } from "../services/getBalance.ts";
import { getDepositAddress } from "../services/getDepositAddress.ts";
import { listTransactions } from "../services/listTransactions.ts";
import { type Principal, authenticate, requirePermission } from "./auth.ts";
import { ApiError, badRequest } from "./errors.ts";
import type { Metrics } from "./metrics.ts";
import { registerPaymentRoutes } from "./paymentRoutes.ts";
import { registerWebhookRoutes } from "./webhookRoutes.ts";

export type CreateAppOptions = { metrics: Metrics; bodyLimitBytes?: number };

/** Authenticates, applies the per-token rate limit, and returns the principal. */
export async function guard(ctx: AppContext, req: FastifyRequest, reply: FastifyReply): Promise<Principal> {
  const principal = await authenticate(ctx, req);
  const rate = await ctx.rateLimiter.hit(principal.tokenId);
  reply.headers({ "ratelimit-limit": rate.limit, "ratelimit-remaining": rate.remaining, "ratelimit-reset": rate.resetSeconds, "ratelimit-policy": `${rate.limit};w=60` });
  if (!rate.allowed) {
    throw new ApiError(429, "rate_limited", `Rate limit exceeded: at most ${rate.limit} requests per minute per token. Retry after ${rate.resetSeconds} s.`, {
      "retry-after": String(rate.resetSeconds),
    });
  }
  return principal;
}

function parseListQuery(query: unknown): { limit: number; offset: number } {
  const q = (query ?? {}) as Record<string, unknown>;
  const check = (name: "limit" | "offset", min: number, max: number, def: number): number => {
    const raw = q[name];
    if (raw === undefined) return def;
    const text = Array.isArray(raw) ? String(raw[0]) : String(raw);
    if (!/^-?\d+$/.test(text) || !Number.isSafeInteger(Number(text))) {
      throw badRequest("invalid_query", `Query parameter '${name}' must be an integer from ${min} to ${max} (got "${text.slice(0, 40)}").`);
    }
    const n = Number(text);
    if (n < min || n > max) throw badRequest("invalid_query", `Query parameter '${name}' must be from ${min} to ${max} (got ${n}).`);
    return n;
  };
  return {
    limit: check("limit", limits.pageLimitMin, limits.pageLimitMax, limits.pageLimitDefault),
    offset: check("offset", 0, limits.pageOffsetMax, 0),
  };
}

export function createApp(ctx: AppContext, options: CreateAppOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: ctx.logger,
    bodyLimit: options.bodyLimitBytes ?? 2 * 1024 * 1024,
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && /^[\w.:-]{1,64}$/.test(given) ? given : randomUUID();
    },
    // Our own onResponse hook logs one line per request, without headers.
    logController: new LogController({ requestIdLogLabel: "request_id", disableRequestLogging: true }),
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 200 },
  });
  const { metrics } = options;
  // The API speaks JSON only: anything else is a 415 with a clear detail.
  app.removeContentTypeParser("text/plain");

  // Callback-style hooks: an async one costs a promise and a microtask hop on every request.
  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
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
    if (ctx.logger.isLevelEnabled("info")) req.log.info({ method: req.method, route, status: reply.statusCode, ms: Math.round(ms * 10) / 10, token_id: req.principal?.tokenId }, "request");
    done();
  });

  app.setErrorHandler((err: unknown, req, reply) => {
    if (err instanceof ApiError) {
      for (const [k, v] of Object.entries(err.headers)) reply.header(k, v);
      return reply.code(err.status).send({ detail: err.detail, code: err.code });
    }
    const fe = err as { statusCode?: number; code?: string; message?: string };
    if (fe.statusCode && fe.statusCode >= 400 && fe.statusCode < 500) {
      // Fastify's own client errors: bad JSON, wrong content type, body too large.
      const detail =
        fe.code === "FST_ERR_CTP_INVALID_MEDIA_TYPE" ? "Content-Type must be application/json."
        : fe.code === "FST_ERR_CTP_BODY_TOO_LARGE" ? "Request body is too large."
        : fe.code === "FST_ERR_CTP_EMPTY_JSON_BODY" ? "Request body is empty; send a JSON object."
        : `Malformed request: ${fe.message ?? "invalid"}`;
      return reply.code(fe.statusCode).send({ detail, code: "invalid_request" });
    }
    req.log.error({ err }, "unhandled error");
    return reply.code(500).send({ detail: `Internal error. Nothing was charged by this failure unless GET /v1/transactions shows it. Request id: ${req.id}.`, code: "internal_error" });
  });
  app.setNotFoundHandler((req, reply) => {
    reply.code(404).send({ detail: `No route ${req.method} ${req.url.split("?")[0]}. See GET /openapi.json for the API.`, code: "not_found" });
  });

  app.get("/healthz", async () => ({ status: "ok" }));
  app.get("/readyz", async (_req, reply) => {
    try {
      await sql`select 1`.execute(ctx.ledger.db);
      // Requests are served while settlement starts; payments accepted meanwhile settle once it runs.
      const settlement = ctx.hooks.settlementRunning?.();
      return settlement === undefined ? { status: "ready" } : { status: "ready", settlement: settlement ? "running" : "starting" };
    } catch (err) {
      ctx.logger.warn({ err }, "readiness check failed");
      return reply.code(503).send({ detail: "Database unavailable.", code: "not_ready" });
    }
  });
  app.get("/metrics", async (_req, reply) => {
    reply.header("content-type", metrics.registry.contentType);
    return metrics.registry.metrics();
  });
  const openapi = buildOpenApiDocument(ctx.config.publicBaseUrl ?? "/");
  app.get("/openapi.json", async () => openapi);

  app.get("/v1/balance", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "read");
    return getBalance(p);
  });
  app.get("/v1/stablecoin/address", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "read");
    return getDepositAddress(ctx, p.projectId);
  });
  app.get("/v1/transactions", async (req, reply) => {
    const p = await guard(ctx, req, reply);
    requirePermission(p, "read");
    const { limit, offset } = parseListQuery(req.query);
    return listTransactions(ctx, p.projectId, limit, offset);
  });

  registerPaymentRoutes(app as unknown as FastifyInstance, ctx, metrics);
  registerWebhookRoutes(app as unknown as FastifyInstance, ctx);
  return app as unknown as FastifyInstance;
}
