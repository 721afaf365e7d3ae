/** A project's overview: balance, deposit address with its QR code, 30 days of spend, recent activity; its live figures for the page's script; sandbox funding. */
import type { FastifyInstance } from "fastify";
import QRCode from "qrcode";
import { canFund, overviewPage } from "../pages.ts";
import { ConsoleError, type Kit, one, sameText } from "./kit.ts";

/** The 30 UTC days up to today, oldest first, for the spend chart. */
function days30(now: Date): string[] {
  const out: string[] = [];
  const start = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - 29 * 86_400_000;
  for (let i = 0; i < 30; i++) out.push(new Date(start + i * 86_400_000).toISOString().slice(0, 10));
  return out;
}

export function registerOverview(c: FastifyInstance, k: Kit): void {
  const { opts, backend, pageContext, send, sessionOf, requireSession, checkPost, projectFor } = k;
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
    const { formatMicros } = await import("../format.ts");
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
}
