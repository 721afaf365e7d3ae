/**
 * The web console, a Fastify plugin the API server registers at /console. Pages are rendered on the server
 * from the service's own functions (the `ConsoleBackend` port), so the browser never holds a token: signing in
 * exchanges a token or the admin key for a session cookie (`HttpOnly`, `SameSite=Strict`, `Secure` over HTTPS,
 * path /console). Every state-changing request is a POST carrying the session's CSRF token (a hidden field, or
 * the `x-csrf-token` header from the page's script) and, when the browser sends one, a same-origin `Origin`.
 */
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import QRCode from "qrcode";
import { CSS, JS } from "./assets.ts";
import type { ConsoleBackend, Controls, NewToken, OneTimeViewKind, Session, TransactionQuery, WebhookEndpoint } from "./backend.ts";
import type { Html } from "./html.ts";
import {
  type PageContext,
  STATUSES,
  TYPES,
  type ControlsFormValues,
  INTERVALS,
  RAILS,
  agentsPage,
  alreadyShownPage,
  approvalsPage,
  canFund,
  canDecide,
  canManage,
  controlsFormValues,
  errorPage,
  mcpSnippet,
  newTokenPage,
  tokenCreatedPage,
  tokenPage,
  webhookCreatedPage,
  webhookPage,
  webhooksPage,
  overviewPage,
  projectsPage,
  signInPage,
  transactionPage,
  transactionsPage,
} from "./pages.ts";

export type { ApprovalItem, ConsoleBackend, Controls, DailySpend, HistoryEntry, RefusalItem, WebhookDelivery, WebhookEndpoint, LimitWindow, NewToken, OneTimeViewKind, Overview, ProjectSummary, Session, TokenSummary, TransactionQuery, Viewer } from "./backend.ts";

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
};

const COOKIE = "aw_console";
const SIGNIN_ATTEMPTS_PER_MINUTE = 20;
const PAGE_SIZE = 50;

class ConsoleError extends Error {
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

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

function many(v: unknown): string[] | undefined {
  if (v === undefined) return undefined;
  const list = (Array.isArray(v) ? v : [v]).flatMap((x) => String(x).split(",")).map((x) => x.trim()).filter(Boolean);
  return list.length ? list : undefined;
}

function one(v: unknown): string | undefined {
  if (v === undefined) return undefined;
  const s = String(Array.isArray(v) ? v[0] : v).trim();
  return s === "" ? undefined : s;
}

/** The controls a form names: every field given (an edit replaces the token's controls as a whole). */
function controlsFromForm(body: Record<string, string>): Controls {
  const usd = (name: string, label: string): number | null => {
    const text = (body[name] ?? "").trim().replace(/^\$/, "").replace(/,/g, "");
    if (!text) return null;
    if (!/^\d{1,10}(\.\d{1,6})?$/.test(text)) throw new ConsoleError(400, `${label}: write an amount in US dollars such as 10 or 2.50, or leave it empty.`);
    return Number(text);
  };
  const lines = (name: string) => (body[name] ?? "").split(/[\r\n,]+/).map((l) => l.trim()).filter(Boolean);
  const spending_limits: Controls["spending_limits"] = [];
  for (const interval of INTERVALS) {
    const amount = usd(`limit_${interval}`, `${interval.replace("_", " ")} limit`);
    if (amount !== null) spending_limits.push({ interval, amount_usd: amount });
  }
  const rails = RAILS.filter((r) => body[`rail_${r}`] !== undefined);
  if (rails.length === 0) throw new ConsoleError(400, "Tick at least one rail the token may pay on (to stop it paying, revoke it).");
  const allowed = lines("allowed_recipients");
  const controls: Controls = {
    spending_limits,
    allowed_recipients: allowed.length ? allowed : null,
    blocked_recipients: lines("blocked_recipients"),
    allowed_rails: rails.length === RAILS.length ? null : rails,
    approval_above_usd: usd("approval_above_usd", "Approval above"),
  };
  return controls;
}

/**
 * An edit's controls: a recipient list the person left as it was shown is not sent, so it keeps what is
 * stored (a bank account is shown masked and could not be read back from the page).
 */
function changedControlsFromForm(body: Record<string, string>): Partial<Controls> {
  const c: Partial<Controls> = controlsFromForm(body);
  const same = (name: string) => {
    const norm = (text: string | undefined) => (text ?? "").split(/[\r\n,]+/).map((l) => l.trim()).filter(Boolean).join("\n");
    return body[`shown_${name}`] !== undefined && norm(body[name]) === norm(body[`shown_${name}`]);
  };
  if (same("allowed_recipients")) delete c.allowed_recipients;
  if (same("blocked_recipients")) delete c.blocked_recipients;
  return c;
}

/** A small sliding count per client address (`req.ip`, TRUST_PROXY's client behind a proxy): sign-in guesses are bounded. */
function attemptLimiter(perMinute: number) {
  const seen = new Map<string, number[]>();
  return (key: string, now: number): boolean => {
    const list = (seen.get(key) ?? []).filter((t) => now - t < 60_000);
    if (list.length >= perMinute) {
      seen.set(key, list);
      return false;
    }
    list.push(now);
    seen.set(key, list);
    if (seen.size > 10_000) seen.delete(seen.keys().next().value!);
    return true;
  };
}

export function registerConsole(app: FastifyInstance, opts: ConsoleOptions): void {
  const { backend } = opts;
  const allowAttempt = attemptLimiter(SIGNIN_ATTEMPTS_PER_MINUTE);
  /** A refusal the person can correct (400 from the console or the service), as opposed to a fault or a denial. */
  const correctable = (err: unknown): string | null =>
    (err instanceof ConsoleError ? err.status : opts.refusalStatus(err)) === 400 ? (err as Error).message : null;

  void app.register(
    async (c) => {
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
        // the origin check below must refuse (a sandboxed frame of another site sends it too).
        reply.header("referrer-policy", "same-origin");
        reply.header("x-frame-options", "DENY");
        reply.header(
          "content-security-policy",
          "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        );
        return payload;
      });

      const pageContext = (session: Session | null, extra: Partial<PageContext> = {}): PageContext => ({
        viewer: session?.viewer ?? null,
        csrf: session?.csrf ?? "",
        sandbox: opts.sandbox,
        explorerTxUrl: opts.explorerTxUrl,
        ...extra,
      });

      const send = (reply: FastifyReply, page: Html, status = 200) => reply.code(status).type("text/html; charset=utf-8").send(page.text);

      c.setErrorHandler(async (err, req, reply) => {
        // Refusals of the service (a bad filter, an unknown id) and Fastify's client errors carry their status; anything else is a fault.
        const given = opts.refusalStatus(err) ?? (err as { statusCode?: unknown }).statusCode;
        const status = err instanceof ConsoleError ? err.status : typeof given === "number" && given >= 400 && given < 500 ? given : 500;
        if (status >= 500) req.log.error({ err }, "console request failed");
        const message = status >= 500 ? `Internal error. Request id: ${req.id}.` : (err as Error).message;
        if (req.headers.accept === "application/json") return reply.code(status).send({ detail: message, code: status === 401 ? "unauthorized" : status === 403 ? "permission_denied" : status === 404 ? "not_found" : "console_error" });
        const session = await sessionOf(req).catch(() => null);
        return send(reply, errorPage(pageContext(session), status, message), status);
      });

      const sessionOf = async (req: FastifyRequest): Promise<Session | null> => {
        const id = readCookie(req, COOKIE);
        if (!id || id.length > 200) return null;
        return backend.getSession(id);
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

      const startSession = async (reply: FastifyReply, req: FastifyRequest, viewer: { kind: "operator"; credentialId: string } | { kind: "token"; tokenId: string }) => {
        const s = await backend.createSession(viewer);
        // Secure over HTTPS: `req.protocol` is the trusted proxy's X-Forwarded-Proto (TRUST_PROXY). The header from
        // any peer is read as well, since it can only make the cookie stricter (a deployment without TRUST_PROXY behind
        // a TLS proxy keeps Secure cookies).
        const forwarded = String(req.headers["x-forwarded-proto"] ?? "").split(",")[0]!.trim();
        const secure = req.protocol === "https" || forwarded === "https" ? "; Secure" : "";
        reply.header("set-cookie", `${COOKIE}=${encodeURIComponent(s.id)}; Path=/console; HttpOnly; SameSite=Strict; Expires=${new Date(s.expiresAt).toUTCString()}${secure}`);
        return reply.redirect("/console", 303);
      };

      /** The client (`req.ip`: the address the trusted proxy reports, else the peer's) tried too often; the log names it. */
      const tooManyAttempts = (req: FastifyRequest, reply: FastifyReply) => {
        req.log.warn({ client_ip: req.ip }, "console sign-in attempts limited");
        return send(reply, signInPage(pageContext(null), "Too many sign-in attempts. Wait a minute and try again."), 429);
      };

      c.get("/console/assets/console.css", async (_req, reply) => reply.type("text/css; charset=utf-8").send(CSS));
      c.get("/console/assets/console.js", async (_req, reply) => reply.type("text/javascript; charset=utf-8").send(JS));

      c.get("/console", async (req, reply) => {
        const s = await sessionOf(req);
        if (!s) return reply.redirect("/console/signin", 303);
        return reply.redirect(s.viewer.kind === "operator" ? "/console/projects" : `/console/p/${s.viewer.projectId}`, 303);
      });

      c.get("/console/signin", async (req, reply) => {
        const code = one((req.query as Record<string, unknown>).code);
        return send(reply, signInPage(pageContext(null), undefined, code && /^[A-Za-z0-9_-]{10,100}$/.test(code) ? code : undefined));
      });

      c.post("/console/signin", async (req, reply) => {
        checkOrigin(req);
        if (!allowAttempt(req.ip, Date.now())) return tooManyAttempts(req, reply);
        const body = (req.body ?? {}) as Record<string, string>;
        const secret = (body.secret ?? "").trim();
        if (body.kind === "operator") {
          const credentialId = secret ? await backend.verifyAdminCredential(secret) : null;
          if (credentialId) return startSession(reply, req, { kind: "operator", credentialId });
          return send(reply, signInPage(pageContext(null), "That admin key is not this deployment's."), 401);
        }
        const who = secret ? await backend.verifyToken(secret) : null;
        if (!who) return send(reply, signInPage(pageContext(null), "That token is not valid here: it may be mistyped, revoked or expired."), 401);
        return startSession(reply, req, { kind: "token", tokenId: who.tokenId });
      });

      c.post("/console/signin/code", async (req, reply) => {
        checkOrigin(req);
        if (!allowAttempt(req.ip, Date.now())) return tooManyAttempts(req, reply);
        const code = ((req.body ?? {}) as Record<string, string>).code ?? "";
        const who = code ? await backend.redeemSignInCode(code) : null;
        if (!who) return send(reply, signInPage(pageContext(null), "That sign-in link was already used or has expired. Sign in with the token instead."), 401);
        return startSession(reply, req, { kind: "token", tokenId: who.tokenId });
      });

      c.post("/console/signout", async (req, reply) => {
        const s = await sessionOf(req);
        if (s) {
          checkPost(req, s);
          await backend.deleteSession(s.id);
        }
        reply.header("set-cookie", `${COOKIE}=; Path=/console; HttpOnly; SameSite=Strict; Max-Age=0`);
        return reply.redirect("/console/signin", 303);
      });

      c.get("/console/projects", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        if (s.viewer.kind !== "operator") return reply.redirect(`/console/p/${s.viewer.projectId}`, 303);
        return send(reply, projectsPage(pageContext(s, { current: "projects" }), await backend.listProjects()));
      });

      const days30 = (now: Date): string[] => {
        const out: string[] = [];
        const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 29 * 86_400_000;
        for (let i = 0; i < 30; i++) out.push(new Date(start + i * 86_400_000).toISOString().slice(0, 10));
        return out;
      };

      c.get<{ Params: { pid: string } }>("/console/p/:pid", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const [overview, deposit, spend, recent, approvals, refusals] = await Promise.all([
          backend.overview(project.id),
          backend.depositAddress(project.id),
          backend.spendByDay(project.id, 30),
          backend.listTransactions(project.id, { limit: 10 }),
          backend.listApprovals(project.id),
          backend.listRefusals(project.id, null, 5),
        ]);
        const qrSvg = await QRCode.toString(deposit.address, { type: "svg", margin: 1, errorCorrectionLevel: "M" });
        const funded = one((req.query as Record<string, unknown>).funded) === "1";
        return send(reply, overviewPage(pageContext(s, { project, current: "overview" }), { overview, deposit, qrSvg, spend, days: days30(new Date()), recent: recent.transactions, awaiting: approvals.awaiting, refusals, funded, x402: opts.x402Example ? { ...opts.x402Example, baseUrl: `${req.protocol}://${req.headers.host ?? "127.0.0.1"}` } : null }));
      });

      c.get<{ Params: { pid: string } }>("/console/p/:pid/live", async (req, reply) => {
        const s = await sessionOf(req);
        if (!s) throw new ConsoleError(401, "Sign in again: the session ended.");
        if (!sameText(String(req.headers["x-csrf-token"] ?? ""), s.csrf)) throw new ConsoleError(403, "Missing or wrong CSRF token.");
        const project = await projectFor(s, req.params.pid);
        const o = await backend.overview(project.id);
        const { formatMicros } = await import("./format.ts");
        return reply.send({ available: formatMicros(o.available), pending: formatMicros(o.pending), held: formatMicros(o.held), total_funded: formatMicros(o.total_funded), total_spent: formatMicros(o.total_spent) });
      });

      c.post<{ Params: { pid: string } }>("/console/p/:pid/fund", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        checkPost(req, s);
        const project = await projectFor(s, req.params.pid);
        if (!backend.fundSandbox || !canFund(pageContext(s))) throw new ConsoleError(403, "Funding with test USDC is for the sandbox, by the operator or a token that may pay.");
        await backend.fundSandbox(project.id, 10);
        return reply.redirect(`/console/p/${project.id}?funded=1`, 303);
      });

      c.get<{ Params: { pid: string } }>("/console/p/:pid/transactions", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const raw = req.query as Record<string, unknown>;
        const q: TransactionQuery = { limit: PAGE_SIZE };
        if (opts.filters) {
          q.type = many(raw.type)?.filter((t) => (TYPES as readonly string[]).includes(t));
          q.status = many(raw.status)?.filter((t) => (STATUSES as readonly string[]).includes(t));
          q.created_after = one(raw.created_after);
          q.created_before = one(raw.created_before);
          q.starting_after = one(raw.starting_after);
        }
        const list = await backend.listTransactions(project.id, q);
        return send(reply, transactionsPage(pageContext(s, { project, current: "transactions" }), q, list, opts.filters));
      });

      c.get<{ Params: { pid: string } }>("/console/p/:pid/webhooks", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const deleted = one((req.query as Record<string, unknown>).deleted) === "1";
        return send(reply, webhooksPage(pageContext(s, { project, current: "webhooks" }), await backend.listWebhooks(project.id), backend.webhookEventTypes, deleted ? { notice: "Endpoint deleted: nothing more is sent to it." } : {}));
      });

      c.post<{ Params: { pid: string } }>("/console/p/:pid/webhooks", async (req, reply) => {
        const m = await managedPost(req, reply, "webhooks");
        if (!m) return reply;
        const url = (m.body.url ?? "").trim();
        const events = backend.webhookEventTypes.filter((t) => m.body[`event_${t}`] !== undefined);
        try {
          const { endpoint, secret } = await backend.createWebhook(m.s.viewer, m.project.id, { url, events });
          // Post, redirect, get, as for tokens: the secret is shown once and a reload adds no endpoint.
          const view = await backend.keepOneTimeView(m.s, m.project.id, "webhook", { endpoint, secret });
          return reply.redirect(`/console/p/${m.project.id}/webhooks/created/${view}`, 303);
        } catch (err) {
          const message = correctable(err);
          if (message === null) throw err;
          return send(reply, webhooksPage(m.pc, await backend.listWebhooks(m.project.id), backend.webhookEventTypes, { url, events, error: message }), 400);
        }
      });

      c.get<{ Params: { pid: string; vid: string } }>("/console/p/:pid/webhooks/created/:vid", async (req, reply) => {
        const v = await oneTimeView(req, reply, "webhook");
        if (!v) return reply;
        const shown = v.shown as { endpoint: WebhookEndpoint; secret: string };
        return send(reply, webhookCreatedPage(v.pc, shown.endpoint, shown.secret));
      });

      c.get<{ Params: { pid: string; wid: string } }>("/console/p/:pid/webhooks/:wid", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const w = await backend.getWebhook(project.id, req.params.wid);
        if (!w) throw new ConsoleError(404, "No such webhook endpoint in this project.");
        const q = req.query as Record<string, unknown>;
        const notice = one(q.redelivered) ? `Sent again: ${one(q.redelivered)} delivery(ies) scheduled now.` : one(q.enabled) ? "Enabled: what is pending is sent now." : undefined;
        return send(reply, webhookPage(pageContext(s, { project, current: "webhooks" }), w.endpoint, w.deliveries, notice));
      });

      c.post<{ Params: { pid: string; wid: string; action: string } }>("/console/p/:pid/webhooks/:wid/:action", async (req, reply) => {
        const action = req.params.action;
        if (action !== "delete" && action !== "enable") throw new ConsoleError(404, "No such action.");
        const m = await managedPost(req, reply, "webhooks");
        if (!m) return reply;
        const done = action === "delete" ? await backend.deleteWebhook(m.s.viewer, m.project.id, req.params.wid) : await backend.enableWebhook(m.s.viewer, m.project.id, req.params.wid);
        if (!done) throw new ConsoleError(404, "No such webhook endpoint in this project.");
        return reply.redirect(action === "delete" ? `/console/p/${m.project.id}/webhooks?deleted=1` : `/console/p/${m.project.id}/webhooks/${encodeURIComponent(req.params.wid)}?enabled=1`, 303);
      });

      c.post<{ Params: { pid: string; eid: string } }>("/console/p/:pid/webhooks/events/:eid/redeliver", async (req, reply) => {
        const m = await managedPost(req, reply, "webhooks");
        if (!m) return reply;
        const n = await backend.redeliverWebhook(m.s.viewer, m.project.id, req.params.eid);
        if (n === null) throw new ConsoleError(404, "No such webhook event in this project.");
        // Back to the page the button was on: an endpoint's or a transaction's (ids only, never a URL).
        const back = /^(webhooks\/whe_|transactions\/txn_)[A-Za-z0-9_-]{1,80}$/.test(m.body.back ?? "") ? m.body.back! : "webhooks";
        return reply.redirect(`/console/p/${m.project.id}/${back}${back === "webhooks" ? "" : `?redelivered=${n}`}`, 303);
      });

      c.get<{ Params: { pid: string } }>("/console/p/:pid/approvals", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const done = one((req.query as Record<string, unknown>).decided);
        const notice = done === "approved" ? { text: "Approved: the payment is being sent." } : done === "denied" ? { text: "Denied: the payment failed and was credited back." } : undefined;
        return send(reply, approvalsPage(pageContext(s, { project, current: "approvals" }), await backend.listApprovals(project.id), notice));
      });

      c.post<{ Params: { pid: string; id: string; decision: string } }>("/console/p/:pid/approvals/:id/:decision", async (req, reply) => {
        const decision = req.params.decision === "approve" ? "approved" : req.params.decision === "deny" ? "denied" : null;
        if (!decision) throw new ConsoleError(404, "No such action.");
        const m = await managedPost(req, reply, "approvals");
        if (!m) return reply;
        if (!canDecide(m.pc)) throw new ConsoleError(403, "This project's own approval threshold is the operator's: only the operator approves or denies its payments.");
        const out = await backend.decideApproval(m.s.viewer, m.project.id, req.params.id, decision);
        if (!out.ok) return send(reply, approvalsPage(m.pc, await backend.listApprovals(m.project.id), { text: out.detail, error: true }), 409);
        return reply.redirect(`/console/p/${m.project.id}/approvals?decided=${decision}`, 303);
      });

      c.get<{ Params: { pid: string; id: string } }>("/console/p/:pid/transactions/:id", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const t = await backend.getTransaction(project.id, req.params.id);
        if (!t) throw new ConsoleError(404, "No such transaction in this project.");
        const [history, approval, deliveries] = await Promise.all([backend.transactionHistory(project.id, t.id), backend.getApproval(project.id, t.id), backend.transactionDeliveries(project.id, t.id)]);
        const redelivered = one((req.query as Record<string, unknown>).redelivered);
        return send(reply, transactionPage(pageContext(s, { project, current: "transactions" }), t as never, history, approval, deliveries, redelivered ? `Sent again: ${redelivered} delivery(ies) scheduled now.` : undefined));
      });

      c.get<{ Params: { pid: string } }>("/console/p/:pid/agents", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const revoked = one((req.query as Record<string, unknown>).revoked) === "1";
        const [tokens, controls] = await Promise.all([backend.listTokens(project.id), backend.projectControls(project.id)]);
        return send(reply, agentsPage(pageContext(s, { project, current: "agents" }), tokens, controls, revoked ? "Token revoked: requests with it are refused from now on." : undefined));
      });

      /** Token and approval changes: the operator or a token that may manage the project (the backend checks again). */
      const requireManage = (pc: ReturnType<typeof pageContext>) => {
        if (!canManage(pc)) throw new ConsoleError(403, "This sign-in may not manage tokens or approvals: that needs the operator, or a token with read, pay and x402 and no spending controls of its own.");
      };

      /** A change by a signed-in person who may manage this project: session, CSRF and origin, the project, the rule. */
      const managedPost = async (req: FastifyRequest<{ Params: { pid: string } }>, reply: FastifyReply, current: PageContext["current"]) => {
        const s = await requireSession(req, reply);
        if (!s) return null;
        checkPost(req, s);
        const project = await projectFor(s, req.params.pid);
        const pc = pageContext(s, { project, current });
        requireManage(pc);
        return { s, project, pc, body: (req.body ?? {}) as ControlsFormValues };
      };

      c.get<{ Params: { pid: string } }>("/console/p/:pid/agents/new", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const pc = pageContext(s, { project, current: "agents" });
        requireManage(pc);
        return send(reply, newTokenPage(pc, { ...controlsFormValues(null), perm_read: "on" }));
      });

      c.post<{ Params: { pid: string } }>("/console/p/:pid/agents", async (req, reply) => {
        const m = await managedPost(req, reply, "agents");
        if (!m) return reply;
        const { s, project, pc, body } = m;
        try {
          const permissions = (["read", "pay", "x402"] as const).filter((p) => body[`perm_${p}`] !== undefined);
          if (permissions.length === 0) throw new ConsoleError(400, "Tick at least one permission.");
          const days = body.expires_in_days ? Number(body.expires_in_days) : null;
          if (days !== null && !(Number.isInteger(days) && days > 0 && days <= 3650)) throw new ConsoleError(400, "Expiry must be a number of days from 1 to 3650.");
          const controls = controlsFromForm(body);
          const created = await backend.createToken(s.viewer, project.id, { permissions: [...permissions], expiresInDays: days, controls });
          const baseUrl = `${req.protocol}://${req.headers.host ?? "127.0.0.1"}`;
          // Post, redirect, get: the page with the token is a GET shown once, so a reload creates nothing.
          const view = await backend.keepOneTimeView(s, project.id, "token", { token: created, snippet: mcpSnippet(created, baseUrl, opts.mcpCommand, controls) });
          return reply.redirect(`/console/p/${project.id}/agents/created/${view}`, 303);
        } catch (err) {
          const message = correctable(err);
          if (message === null) throw err;
          return send(reply, newTokenPage(pc, body, message), 400);
        }
      });

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

      c.get<{ Params: { pid: string; vid: string } }>("/console/p/:pid/agents/created/:vid", async (req, reply) => {
        const v = await oneTimeView(req, reply, "token");
        if (!v) return reply;
        const shown = v.shown as { token: NewToken; snippet: string };
        return send(reply, tokenCreatedPage(v.pc, shown.token, shown.snippet));
      });

      const tokenOf = async (projectId: string, tokenId: string) => {
        const t = await backend.getToken(projectId, tokenId);
        if (!t) throw new ConsoleError(404, "No such token in this project.");
        return t;
      };

      c.get<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid", async (req, reply) => {
        const s = await requireSession(req, reply);
        if (!s) return reply;
        const project = await projectFor(s, req.params.pid);
        const t = await tokenOf(project.id, req.params.tid);
        const saved = one((req.query as Record<string, unknown>).saved) === "1";
        return send(reply, tokenPage(pageContext(s, { project, current: "agents" }), t, controlsFormValues(t.controls), await backend.listRefusals(project.id, t.id, 20), { saved }));
      });

      c.post<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid/controls", async (req, reply) => {
        const m = await managedPost(req, reply, "agents");
        if (!m) return reply;
        const { s, project, pc, body } = m;
        try {
          if (!(await backend.updateTokenControls(s.viewer, project.id, req.params.tid, changedControlsFromForm(body)))) throw new ConsoleError(404, "No such token in this project.");
        } catch (err) {
          const message = correctable(err);
          if (message === null) throw err;
          return send(reply, tokenPage(pc, await tokenOf(project.id, req.params.tid), body, await backend.listRefusals(project.id, req.params.tid, 20), { error: message }), 400);
        }
        return reply.redirect(`/console/p/${project.id}/agents/${encodeURIComponent(req.params.tid)}?saved=1`, 303);
      });

      c.post<{ Params: { pid: string; tid: string } }>("/console/p/:pid/agents/:tid/revoke", async (req, reply) => {
        const m = await managedPost(req, reply, "agents");
        if (!m) return reply;
        const { s, project } = m;
        if (!(await backend.revokeToken(s.viewer, project.id, req.params.tid))) throw new ConsoleError(404, "No such active token in this project.");
        // Revoking the token this session signed in with ends the session: the next page asks to sign in.
        return reply.redirect(`/console/p/${project.id}/agents?revoked=1`, 303);
      });
    },
  );
}
