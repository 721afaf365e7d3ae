/**
 * Projects as an operator manages them: create, list, read, pause and resume. The CLI (`projects …`) and
 * the admin API (`/v1/admin/projects…`) call these, so both apply the same rules and show one JSON shape.
 */
import type { ProjectStore } from "../ledger/ports.ts";
import type { ProjectRow } from "../ledger/projects.ts";
import type { Plan } from "../domain/project.ts";
import { badRequest, notFound } from "../domain/errors.ts";
import { parseControls } from "../domain/spending.ts";
import { renderControls } from "./spendingControls.ts";
import type { Actor } from "../domain/audit.ts";

export const PLANS: Plan[] = ["free", "pro", "business"];
export const PROJECT_NAME_MAX_CHARS = 200;

/**
 * The one JSON shape of a project (`paused` a boolean on both databases). `wallet_address` is null until
 * the first deposit address is derived; `spending_controls` are those every token of the project obeys too.
 */
export function projectJson(p: ProjectRow) {
  return { id: p.id, name: p.name, plan: p.plan, paused: Boolean(Number(p.paused)), wallet_index: p.wallet_index, wallet_address: p.wallet_address, spending_controls: renderControls(parseControls(p.spending_controls)), created_at: p.created_at };
}

export function projectNotFound(id: string) {
  return notFound("project_not_found", `There is no project with id ${id.slice(0, 80)}; list them with GET /v1/admin/projects or \`agentwallet projects list\`.`);
}

export async function createProject(ctx: { ledger: { projects: ProjectStore } }, input: { name: string; plan?: string }) {
  const name = input.name.trim();
  const plan = (input.plan ?? "free") as Plan;
  if (!PLANS.includes(plan)) throw badRequest("invalid_request", `The plan must be ${PLANS.join(", ")} (got "${String(input.plan).slice(0, 40)}").`);
  if (name.length === 0 || name.length > PROJECT_NAME_MAX_CHARS) throw badRequest("invalid_request", `The name must be 1 to ${PROJECT_NAME_MAX_CHARS} characters.`);
  return projectJson(await ctx.ledger.projects.create({ name, plan }));
}

export async function listProjects(ctx: { ledger: { projects: ProjectStore } }) {
  return (await ctx.ledger.projects.list()).map(projectJson);
}

export async function getProject(ctx: { ledger: { projects: ProjectStore } }, id: string) {
  const p = await ctx.ledger.projects.get(id);
  if (!p) throw projectNotFound(id);
  return projectJson(p);
}

/** Paused: new payments of the project are refused (403 `project_paused`); resumed, they are accepted again. */
export async function setProjectPaused(ctx: { ledger: { projects: ProjectStore } }, id: string, paused: boolean, actor?: Actor) {
  if (!(await ctx.ledger.projects.setPaused(id, paused, actor))) throw projectNotFound(id);
  return getProject(ctx, id);
}
