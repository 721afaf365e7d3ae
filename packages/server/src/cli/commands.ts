/** The CLI's commands, each a function of (config, args, options) → exit code. */
import type { Config } from "../config.ts";
import { openLedger } from "../deps.ts";
import { verifyLedger } from "../ledger/verify.ts";
import type { Plan } from "../ledger/schema.ts";
import { newId, systemClock } from "../ids.ts";
import { createToken, parseDuration, parsePermissions } from "../services/tokens.ts";
import { runServe } from "./serve.ts";
import { fund, sandboxInfo } from "./sandboxCommands.ts";
import { reconcileCommand, workersRunOnce } from "./opsCommands.ts";

export type CommandIo = { json: boolean; out(human: string, data: unknown): void };
export type CommandInput = { config: Config; args: string[]; options: Record<string, string | boolean | undefined>; io: CommandIo };
export type Command = (input: CommandInput) => Promise<number>;

export class CliError extends Error {
  override name = "CliError";
}

function need(options: CommandInput["options"], name: string): string {
  const v = options[name];
  if (typeof v !== "string" || v === "") throw new CliError(`--${name} is required`);
  return v;
}

async function withLedger<T>(config: Config, fn: (l: Awaited<ReturnType<typeof openLedger>>["ledger"]) => Promise<T>): Promise<T> {
  const { ledger, opened } = await openLedger(config);
  try {
    return await fn(ledger);
  } finally {
    await opened.close();
  }
}

export const commands: Record<string, Command> = {
  serve: async ({ config }) => runServe(config),
  fund: async (input) => fund(input),
  "sandbox info": async (input) => sandboxInfo(input),
  "workers run-once": async (input) => workersRunOnce(input),
  reconcile: async (input) => reconcileCommand(input),

  migrate: async ({ config, io }) => {
    const { opened } = await openLedger(config);
    await opened.close();
    io.out(`Database is at the latest schema (${opened.dialect}).`, { ok: true, dialect: opened.dialect });
    return 0;
  },

  "projects create": async ({ config, options, io }) => {
    const name = need(options, "name");
    const plan = (options.plan ?? "free") as Plan;
    if (!["free", "pro", "business"].includes(plan)) throw new CliError("--plan must be free, pro or business");
    if (name.length > 200) throw new CliError("--name must be at most 200 characters");
    const p = await withLedger(config, (l) => l.createProject({ name, plan }));
    io.out(`Created project ${p.id} (${p.name}, plan ${p.plan}).`, p);
    return 0;
  },

  "projects list": async ({ config, io }) => {
    const rows = await withLedger(config, (l) => l.listProjects());
    io.out(rows.map((p) => `${p.id}  ${p.plan.padEnd(8)} ${p.paused ? "paused " : "active "} ${p.name}`).join("\n") || "No projects.", rows.map((p) => ({ ...p, paused: p.paused === 1 })));
    return 0;
  },

  "projects pause": async ({ config, args, io }) => setPaused(config, args, io, true),
  "projects resume": async ({ config, args, io }) => setPaused(config, args, io, false),

  "tokens create": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const permissions = parsePermissions(need(options, "permissions"));
    const expiresInMs = typeof options["expires-in"] === "string" ? parseDuration(options["expires-in"]) : undefined;
    const created = await withLedger(config, (l) =>
      createToken({ ledger: l, clock: systemClock, newId }, { projectId, permissions, mode: config.mode === "live" ? "live" : "test", expiresInMs }),
    );
    io.out(
      `Token ${created.id} for ${projectId} (${permissions.join(",")}${created.expires_at ? `, expires ${created.expires_at}` : ""}):\n\n  ${created.token}\n\nIt is shown once; only its hash is stored.`,
      { id: created.id, project_id: projectId, token: created.token, permissions, expires_at: created.expires_at },
    );
    return 0;
  },

  "tokens list": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const rows = await withLedger(config, (l) => l.listTokens(projectId));
    const state = (r: (typeof rows)[number]) => (r.revoked_at ? "revoked" : r.expires_at && r.expires_at <= new Date().toISOString() ? "expired" : "active");
    io.out(
      rows.map((r) => `${r.id}  ${r.display_prefix}…  ${r.permissions.padEnd(13)} ${state(r)}`).join("\n") || "No tokens.",
      rows.map((r) => ({ ...r, permissions: r.permissions.split(","), state: state(r) })),
    );
    return 0;
  },

  "tokens revoke": async ({ config, args, io }) => {
    const id = args[0];
    if (!id) throw new CliError("usage: agentwallet tokens revoke TOKEN_ID");
    const ok = await withLedger(config, (l) => l.revokeToken(id));
    if (!ok) throw new CliError(`no active token with id ${id}`);
    io.out(`Revoked ${id}; requests with it are refused from now on.`, { id, revoked: true });
    return 0;
  },

  "verify-ledger": async ({ config, io }) => {
    const result = await withLedger(config, async (l) => verifyLedger(l.db));
    io.out(
      result.ok
        ? `Ledger verified: ${result.projects} project balances match ${result.entries} journal entries; all invariants hold.`
        : `Ledger problems (${result.problems.length}):\n${result.problems.map((p) => `  ${p.check}: ${p.detail}`).join("\n")}`,
      result,
    );
    return result.ok ? 0 : 1;
  },
};

async function setPaused(config: Config, args: string[], io: CommandIo, paused: boolean): Promise<number> {
  const id = args[0];
  if (!id) throw new CliError(`usage: agentwallet projects ${paused ? "pause" : "resume"} ID`);
  const ok = await withLedger(config, (l) => l.setPaused(id, paused));
  if (!ok) throw new CliError(`no project with id ${id}`);
  io.out(`Project ${id} ${paused ? "paused: payments are refused" : "resumed"}.`, { id, paused });
  return 0;
}
