/** The Spend page: a project's spend by agent, counterparty, rail and day in the current day, week or month, and agents' burn against their limits. */
import type { FastifyInstance } from "fastify";
import type { SpendPeriod } from "../backend.ts";
import { spendPage } from "../spendPage.ts";
import { ConsoleError, type Kit, one } from "./kit.ts";

const PERIODS: readonly SpendPeriod[] = ["day", "week", "month"];

export function registerSpend(c: FastifyInstance, k: Kit): void {
  const { backend, pageContext, send, requireSession, projectFor } = k;
  c.get<{ Params: { pid: string } }>("/console/p/:pid/spend", async (req, reply) => {
    const s = await requireSession(req, reply);
    if (!s) return reply;
    const project = await projectFor(s, req.params.pid);
    const period = (one((req.query as Record<string, unknown>).period) ?? "day") as SpendPeriod;
    if (!PERIODS.includes(period)) throw new ConsoleError(400, `The period is one of ${PERIODS.join(", ")}.`);
    return send(reply, spendPage(pageContext(s, { project, current: "spend" }), await backend.spendReport(project.id, period)));
  });
}
