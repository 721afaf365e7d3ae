/** The CLI's commands, each a function of (config, args, options) → exit code. */
import type { Config } from "../config.ts";
import { openLedger } from "../deps.ts";
import type { Ledger } from "../ledger/store.ts";
import { verifyLedger } from "../ledger/verify.ts";
import type { Plan } from "../ledger/schema.ts";
import { newId, systemClock } from "../ids.ts";
import { createToken, parseDuration, parsePermissions } from "../services/tokens.ts";
import { type Command, type CommandInput, type CommandIo, CliError, need } from "./command.ts";
import { applyTokenControls, spendingCommands } from "./spendingCommands.ts";
import { webhookCommands } from "./webhookCommands.ts";

export type { Command, CommandInput, CommandIo } from "./command.ts";


async function withLedger<T>(config: Config, fn: (l: Awaited<ReturnType<typeof openLedger>>["ledger"]) => Promise<T>): Promise<T> {
  const { ledger, opened } = await openLedger(config);
  try {
    return await fn(ledger);
  } finally {
    await opened.close();
  }
}

type ProjectRow = Awaited<ReturnType<Ledger["listProjects"]>>[number];
type TokenRow = Awaited<ReturnType<Ledger["listTokens"]>>[number];

/**
 * The one JSON shape of a project in every command's --json output (`paused` a boolean on both databases).
 * `wallet_address` is null until the first deposit address is derived.
 */
export function projectJson(p: ProjectRow) {
  return { id: p.id, name: p.name, plan: p.plan, paused: Boolean(Number(p.paused)), wallet_index: p.wallet_index, wallet_address: p.wallet_address, spending_controls: controlsJson(p.spending_controls), created_at: p.created_at };
}

/** Spending controls are stored as JSON text; shown as the object they are (null when none). */
function controlsJson(text: string | null | undefined): unknown {
  return text ? JSON.parse(text) : null;
}

/** The one JSON shape of a token (never its secret; `tokens create` adds `token`, shown that once). */
export function tokenJson(t: TokenRow, now = new Date().toISOString()) {
  const state = t.revoked_at ? "revoked" : t.expires_at && t.expires_at <= now ? "expired" : "active";
  return { id: t.id, project_id: t.project_id, display_prefix: t.display_prefix, permissions: t.permissions.split(","), spending_controls: controlsJson(t.spending_controls), created_at: t.created_at, expires_at: t.expires_at, revoked_at: t.revoked_at, state };
}

async function findToken(ledger: Ledger, id: string): Promise<TokenRow | undefined> {
  return ledger.db
    .selectFrom("api_tokens")
    .select(["id", "project_id", "display_prefix", "permissions", "created_at", "expires_at", "revoked_at", "spending_controls"])
    .where("id", "=", id)
    .executeTakeFirst();
}

export const commands: Record<string, Command> = {
  ...spendingCommands,
  ...webhookCommands,
  // Loaded when run: the server, the chain client and the rails take seconds to import, which the
  // project and token commands do not need.
  serve: async ({ config }) => (await import("./serve.ts")).runServe(config),
  fund: async (input) => (await import("./sandboxCommands.ts")).fund(input),
  "sandbox info": async (input) => (await import("./sandboxCommands.ts")).sandboxInfo(input),
  "workers run-once": async (input) => (await import("./opsCommands.ts")).workersRunOnce(input),
  reconcile: async (input) => (await import("./opsCommands.ts")).reconcileCommand(input),

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
    io.out(`Created project ${p.id} (${p.name}, plan ${p.plan}).`, projectJson(p));
    return 0;
  },

  "projects list": async ({ config, io }) => {
    const rows = await withLedger(config, (l) => l.listProjects());
    io.out(rows.map((p) => `${p.id}  ${p.plan.padEnd(8)} ${p.paused ? "paused " : "active "} ${p.name}`).join("\n") || "No projects.", rows.map(projectJson));
    return 0;
  },

  "projects pause": async ({ config, args, io }) => setPaused(config, args, io, true),
  "projects resume": async ({ config, args, io }) => setPaused(config, args, io, false),

  "tokens create": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const permissions = parseOption("permissions", () => parsePermissions(need(options, "permissions")));
    const expiresIn = options["expires-in"];
    const expiresInMs = typeof expiresIn === "string" ? parseOption("expires-in", () => parseDuration(expiresIn)) : undefined;
    const { created, row } = await withLedger(config, async (l) => {
      if (!(await l.getProject(projectId))) throw new CliError(`no project with id ${projectId}`);
      const created = await createToken({ ledger: l, clock: systemClock, newId }, { projectId, permissions, mode: config.mode === "live" ? "live" : "test", expiresInMs });
      await applyTokenControls(config, l, created.id, options);
      return { created, row: (await findToken(l, created.id))! };
    });
    io.out(
      `Token ${created.id} for ${projectId} (${permissions.join(",")}${created.expires_at ? `, expires ${created.expires_at}` : ""}):\n\n  ${created.token}\n\nIt is shown once; only its hash is stored.`,
      { ...tokenJson(row), token: created.token },
    );
    return 0;
  },

  "tokens list": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const rows = (await withLedger(config, (l) => l.listTokens(projectId))).map((r) => tokenJson(r));
    io.out(rows.map((r) => `${r.id}  ${r.display_prefix}…  ${r.permissions.join(",").padEnd(13)} ${r.state}`).join("\n") || "No tokens.", rows);
    return 0;
  },

  "tokens revoke": async ({ config, args, io }) => {
    const id = args[0];
    if (!id) throw new CliError("usage: agentwallet tokens revoke TOKEN_ID");
    const row = await withLedger(config, async (l) => ((await l.revokeToken(id)) ? findToken(l, id) : undefined));
    if (!row) throw new CliError(`no active token with id ${id}`);
    io.out(`Revoked ${id}; requests with it are refused from now on.`, tokenJson(row));
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
  const project = await withLedger(config, async (l) => ((await l.setPaused(id, paused)) ? l.getProject(id) : undefined));
  if (!project) throw new CliError(`no project with id ${id}`);
  io.out(`Project ${id} ${paused ? "paused: payments are refused" : "resumed"}.`, projectJson(project));
  return 0;
}

/** A flag whose value a service parser rejects: the parser's message, named after the flag. */
function parseOption<T>(flag: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`--${flag}: ${(err as Error).message}`);
  }
}
