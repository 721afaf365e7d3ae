/** Signing in (a project token, the admin key, or the sandbox's one-time link) and out; the entry page sends each viewer to its start. */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { signInPage } from "../pages.ts";
import { COOKIE, type Kit, one } from "./kit.ts";

const SIGNIN_ATTEMPTS_PER_MINUTE = 20;

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

export function registerSignIn(c: FastifyInstance, k: Kit): void {
  const { backend, pageContext, send, sessionOf, checkOrigin, checkPost } = k;
  const allowAttempt = attemptLimiter(SIGNIN_ATTEMPTS_PER_MINUTE);

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
}
