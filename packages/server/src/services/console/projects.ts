/**
 * The projects a console viewer picks from: the operator's list and the project in view, read by the admin
 * API's own functions (services/projects.ts) and cut to what the console shows.
 */
import type { ProjectSummary } from "@agentwallet/console";
import { getProject as getProjectJson, listProjects as listProjectsJson } from "../projects.ts";
import { orNull } from "./orNull.ts";
import type { ConsoleDeps } from "./viewers.ts";

const summary = (p: ProjectSummary): ProjectSummary => ({ id: p.id, name: p.name, plan: p.plan, paused: p.paused, created_at: p.created_at });

export async function listProjects(deps: Pick<ConsoleDeps, "ledger">): Promise<ProjectSummary[]> {
  return (await listProjectsJson(deps)).map(summary);
}

/** The project, or null when there is none with this id. */
export async function getProject(deps: Pick<ConsoleDeps, "ledger">, projectId: string): Promise<ProjectSummary | null> {
  const p = await orNull(getProjectJson(deps, projectId));
  return p ? summary(p) : null;
}
