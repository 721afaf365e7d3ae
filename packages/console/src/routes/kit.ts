/**
 * What the routes of every page share: the session cookie and the checks of a POST (same origin, the session's
 * CSRF token), the project in view and the viewer's right to it, a page's rendering, and the guards of the
 * whole console (form bodies, security headers, error pages). Routes read through the backend; pages render.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { ConsoleBackend, OneTimeViewKind, Session } from "../backend.ts";
import type { Html } from "../html.ts";
import { type ControlsFormValues, type PageContext, alreadyShownPage, canDecide, canManage, errorPage } from "../pages.ts";

export type ConsoleOptions = {
  backend: ConsoleBackend;
  sandbox: boolean;
  /** Live mode: Base's explorer, e.g. "https://basescan.org/tx/"; null shows hashes without links. */
  explorerTxUrl: string | null;
  /** Whether the transaction list accepts the API's filters (type, status, dates, cursor). */
  filters: boolean;
  /** How an MCP client starts the MCP server, for the snippet shown with a new token (packages/mcp/README.md). */
  mcpCommand: { command: string; args: string[] };
  /** Sandbox: the demo x402 merchant, for the overview's example payment (null: not running). */
  x402Example: { paidUrl: string; priceMicros: number } | null;
  /** The HTTP status of a refusal the backend threw (a bad filter, an unknown id); undefined for a fault. */
  refusalStatus: (err: unknown) => number | undefined;
  /** Whether the error is the database at capacity (a pool's wait, a connection limit, a busy write lock): temporary. */
  busy: (err: unknown) => boolean;
};

/** Seconds a page answered 503 for a busy database asks the browser (and any client) to wait, as the API's `service_busy`. */
const BUSY_RETRY_AFTER_S = 2;

/** The session cookie's name (path /console). */
export const COOKIE = "aw_console";

/** A refusal of the console itself, with its HTTP status; its message is shown to the person. */
export class ConsoleError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

function readCookie(req: FastifyRequest, name: string): string | undefined {
  const header = req.headers.cookie;
  if (!header) return undefined;
  for (const part of header.split(";")) {
    const i = part.indexOf("=");
    if (i > 0 && part.slice(0, i).trim() === name) return decodeURIComponent(part.slice(i + 1).trim());
  }
  return undefined;
}

export function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** A query parameter's values, repeated or comma-separated, blanks dropped; undefined when none is left. */
export function many(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const list = (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(",")).map((x) => x.trim()).filter(Boolean);
  return list.length ? list : undefined;
}

/** A query parameter's first value, trimmed; undefined when blank. */
export function one(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  const s = String(Array.isArray(v) ? v[0] : v).trim();
  return s === "" ? undefined : s;
}

/** The helpers of the routes, over one registration's options. */
export type Kit = ReturnType<typeof routeKit>;

export function routeKit(opts: ConsoleOptions) {
  const { backend } = opts;
  /** A refusal the person can correct (400 from the console or the service), as opposed to a fault or a denial. */
  const correctable = (err: unknown): string | null =>
    (err instanceof ConsoleError ? err.status : opts.refusalStatus(err)) === 400 ? (err as Error).message : null;

  const pageContext = (session: Session | null, extra: Partial<PageContext> = {}): PageContext => ({
    viewer: session?.viewer ?? null,
    csrf: session?.csrf ?? "",
    sandbox: opts.sandbox,
    explorerTxUrl: opts.explorerTxUrl,
    ...extra,
  });

  const send = (reply: FastifyReply, page: Html, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page.text);

  const sessionOf = async (req: FastifyRequest): Promise<Session | null> => {
    const id = readCookie(req, COOKIE);
    if (!id || id.length > 200) return null;
    const s = await backend.getSession(id);
    // The client's address rides with the viewer to every change, for its audit entry (never stored in the session).
    return s && { ...s, viewer: { ...s.viewer, ip: req.ip } };
  };

  /** A signed-in session, or a redirect to sign in (pages) / 401 (the page script). */
  const requireSession = async (req: FastifyRequest, reply: FastifyReply): Promise<Session | null> => {
    const s = await sessionOf(req);
    if (s) return s;
    if (req.headers.accept === "application/json") throw new ConsoleError(401, "Sign in again: the session ended.");
    reply.redirect("/console/signin", 303);
    return null;
  };

  /** Every POST: the browser's Origin, when it sends one, is this console's (sign-in too: no login CSRF). */
  const checkOrigin = (req: FastifyRequest) => {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      const host = req.headers.host;
      let ok = false;
      try {
        ok = new URL(origin).host === host;
      } catch {
        ok = false;
      }
      if (!ok) throw new ConsoleError(403, "This request came from another site and was refused.");
    }
  };

  /** POSTs of a session: the origin, and the session's CSRF token (a form field or the script's header). */
  const checkPost = (req: FastifyRequest, session: Session) => {
    checkOrigin(req);
    const body = (req.body ?? {}) as Record<string, string>;
    const sent = body.csrf ?? (req.headers["x-csrf-token"] as string | undefined) ?? "";
    if (!sameText(sent, session.csrf)) throw new ConsoleError(403, "The form expired. Reload the page and try again.");
  };

  /** The project in view, if this viewer may see it. */
  const projectFor = async (session: Session, projectId: string) => {
    const v = session.viewer;
    if (v.kind === "token" && v.projectId !== projectId) throw new ConsoleError(404, "No such project.");
    if (v.kind === "token" && !v.permissions.includes("read")) throw new ConsoleError(403, "This token lacks the 'read' permission the console needs to show a project.");
    const project = await backend.getProject(projectId);
    if (!project) throw new ConsoleError(404, "No such project.");
    return project;
  };

  /** Token and webhook changes: an operator of role admin or a token that may manage the project; decisions: `canDecide` (the backend checks again). */
  const requireManage = (pc: PageContext, what: "manage" | "decide" = "manage") => {
    if (what === "decide") {
      if (!canDecide(pc)) throw new ConsoleError(403, pc.viewer?.kind === "operator" ? "This sign-in's role (viewer) may see approvals but not decide them." : "This project's own approval threshold is the operator's: only the operator approves or denies its payments.");
      return;
    }
    if (!canManage(pc)) throw new ConsoleError(403, pc.viewer?.kind === "operator" ? `This sign-in's role (${pc.viewer.role}) may not change tokens, controls or webhooks: that needs an admin credential.` : "This sign-in may not manage tokens or approvals: that needs the operator, or a token with read, pay and x402 and no spending controls of its own.");
  };

  /** A change by a signed-in person who may manage this project: session, CSRF and origin, the project, the rule. */
  const managedPost = async (req: FastifyRequest<{ Params: { pid: string } }>, reply: FastifyReply, current: PageContext["current"], what: "manage" | "decide" = "manage") => {
    const s = await requireSession(req, reply);
    if (!s) return null;
    checkPost(req, s);
    const project = await projectFor(s, req.params.pid);
    const pc = pageContext(s, { project, current });
    requireManage(pc, what);
    return { s, project, pc, body: (req.body ?? {}) as ControlsFormValues };
  };

  /** A created thing's page, once; then (a reload, back and forward, another session) that it was shown. */
  const oneTimeView = async (req: FastifyRequest<{ Params: { pid: string; vid: string } }>, reply: FastifyReply, kind: OneTimeViewKind) => {
    const s = await requireSession(req, reply);
    if (!s) return null;
    const project = await projectFor(s, req.params.pid);
    const current = kind === "token" ? "agents" : "webhooks";
    const pc = pageContext(s, { project, current });
    const shown = await backend.takeOneTimeView(s, project.id, kind, req.params.vid);
    if (!shown) {
      send(reply, alreadyShownPage(pc, kind), 410);
      return null;
    }
    return { pc, shown };
  };

  return { opts, backend, correctable, pageContext, send, sessionOf, requireSession, checkOrigin, checkPost, projectFor, requireManage, managedPost, oneTimeView };
}

/** Every request of the console: form bodies parsed strictly, security headers on every answer, errors as pages (or JSON for the page's script). */
export function guardRequests(c: FastifyInstance, kit: Kit): void {
  const { opts, pageContext, send, sessionOf } = kit;
  c.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string", bodyLimit: 16_384 }, (_req, body, done) => {
    const params = new URLSearchParams(body as string);
    const out: Record<string, string> = {};
    for (const [k, v] of params) {
      if (k in out) return done(new ConsoleError(400, `The form sent "${k}" twice.`), undefined);
      out[k] = v;
    }
    done(null, out);
  });

  c.addHook("onSend", async (_req, reply, payload) => {
    reply.header("cache-control", "no-store");
    reply.header("x-content-type-options", "nosniff");
    // same-origin, not no-referrer: under no-referrer a browser sends `Origin: null` with a form's POST, which
    // the origin check (checkOrigin) must refuse (a sandboxed frame of another site sends it too).
    reply.header("referrer-policy", "same-origin");
    reply.header("x-frame-options", "DENY");
    reply.header(
      "content-security-policy",
      "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    );
    return payload;
  });

  c.setErrorHandler(async (err, req, reply) => {
    // Refusals of the service (a bad filter, an unknown id) and Fastify's client errors carry their status; anything else is a fault.
    // A busy database is temporary, as the API's 503 `service_busy` says: not a fault to show as one.
    const busy = opts.busy(err);
    const given = opts.refusalStatus(err) ?? (err as { statusCode?: unknown }).statusCode;
    const status = busy ? 503 : err instanceof ConsoleError ? err.status : typeof given === "number" && given >= 400 && given < 500 ? given : 500;
    if (busy) {
      req.log.warn({ err }, "console request met a busy database");
      reply.header("retry-after", String(BUSY_RETRY_AFTER_S));
    } else if (status >= 500) req.log.error({ err }, "console request failed");
    const message = busy
      ? `The service is busy right now. Try again in a few seconds. Request id: ${req.id}.`
      : status >= 500
        ? `Internal error. Request id: ${req.id}.`
        : (err as Error).message;
    if (req.headers.accept === "application/json")
      return reply.code(status).send({ detail: message, code: busy ? "service_busy" : status === 401 ? "unauthorized" : status === 403 ? "permission_denied" : status === 404 ? "not_found" : "console_error" });
    const session = await sessionOf(req).catch(() => null);
    return send(reply, errorPage(pageContext(session), status, message), status);
  });
}
