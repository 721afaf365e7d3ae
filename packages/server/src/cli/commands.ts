/** The CLI's commands, each a function of (config, args, options) → exit code; the work is the services'. */
import { describeDatabase } from "../config.ts";
import { systemClock } from "../ids.ts";
import { openLedger } from "../ledger/open.ts";
import { claimDeployment } from "../services/deployment.ts";
import { DomainError } from "../domain/errors.ts";
import { createProject, listProjects, setProjectPaused } from "../services/projects.ts";
import { issueToken, listTokens, parseDuration, parsePermissions, revokeToken, tokenName } from "../services/tokens.ts";
import { type Command, type CommandInput, type CommandIo, CliError, UsageError, cliActor, configOfDeployment, need, needArg, withServices } from "./command.ts";
import { spendingCommands, wireFromOptions } from "./spendingCommands.ts";
import { adminCommands } from "./adminCommands.ts";
import { webhookCommands } from "./webhookCommands.ts";

export type { Command, CommandInput, CommandIo } from "./command.ts";

export const commands: Record<string, Command> = {
  ...spendingCommands,
  ...webhookCommands,
  ...adminCommands,
  // Loaded when run: the server, the chain client and the rails take seconds to import, which the
  // project and token commands do not need.
  serve: async ({ config }) => (await import("./serve.ts")).runServe(config),
  fund: async (input) => (await import("./sandboxCommands.ts")).fund(input),
  "sandbox info": async (input) => (await import("./sandboxCommands.ts")).sandboxInfo(input),
  "workers run-once": async (input) => (await import("./opsCommands.ts")).workersRunOnce(input),
  reconcile: async (input) => (await import("./opsCommands.ts")).reconcileCommand(input),
  "verify-evidence": async (input) => (await import("./evidenceCommands.ts")).verifyEvidenceCommand(input),
  export: async (input) => (await import("./evidenceCommands.ts")).exportCommand(input),
  init: async (input) => (await import("./deployCommands.ts")).init(input),
  doctor: async (input) => (await import("./deployCommands.ts")).doctor(input),

  migrate: async ({ config, io }) => {
    const { ledger, opened } = await openLedger(config);
    let mode;
    try {
      // A new database takes this configuration's mode; a recorded one keeps its own (and refuses the other mode's shell).
      const recorded = await ledger.deployment.get();
      const record = recorded ?? (await claimDeployment({ ledger, clock: systemClock }, config, describeDatabase(config)));
      mode = configOfDeployment(config, record, true).mode === "live" ? "live" : "test";
    } finally {
      await opened.close();
    }
    io.out(`Database is at the latest schema (${opened.dialect}); deployment mode: ${mode}.`, { ok: true, dialect: opened.dialect, mode });
    return 0;
  },

  "projects create": async ({ config, options, io }) => {
    const name = need(options, "name");
    const p = await withServices(config, (c) => createProject(c, { name, plan: typeof options.plan === "string" ? options.plan : undefined }));
    io.out(`Created project ${p.id} (${p.name}, plan ${p.plan}).`, p);
    return 0;
  },

  "projects list": async ({ config, io }) => {
    const rows = await withServices(config, (c) => listProjects(c));
    io.out(rows.map((p) => `${p.id}  ${p.plan.padEnd(8)} ${p.paused ? "paused " : "active "} ${p.name}`).join("\n") || "No projects.", rows);
    return 0;
  },

  "projects pause": async ({ config, args, io }) => setPaused(config, args, io, true),
  "projects resume": async ({ config, args, io }) => setPaused(config, args, io, false),

  "tokens create": async ({ config, deployment, options, io }) => {
    const projectId = need(options, "project");
    const permissions = parseOption("permissions", () => parsePermissions(need(options, "permissions")));
    const expiresIn = options["expires-in"];
    const expiresInMs = typeof expiresIn === "string" ? parseOption("expires-in", () => parseDuration(expiresIn)) : undefined;
    const controls = wireFromOptions(options, null) ?? undefined;
    const name = typeof options.name === "string" ? parseOption("name", () => tokenName(options.name as string)) : undefined;
    // The token's prefix is the deployment's mode, as its database records it: never the shell's.
    if (!deployment) throw new CliError(`${describeDatabase(config)} records no deployment mode yet (it was created before the record existed): start its server once (\`agentwallet serve\` with the deployment's settings), which records it, then issue tokens`);
    const created = await withServices(config, async (c) => {
      try {
        return await issueToken(c, { projectId, permissions, mode: deployment.mode, expiresInMs, controls, name }, cliActor());
      } catch (err) {
        // The only invalid input issueToken finds is in the control options: a usage mistake.
        if (err instanceof DomainError && err.kind === "invalid") throw new UsageError(err.detail);
        throw err;
      }
    });
    io.out(
      `Token ${created.id}${created.name ? ` "${created.name}"` : ""} for ${projectId} (${permissions.join(",")}${created.expires_at ? `, expires ${created.expires_at}` : ""}):\n\n  ${created.token}\n\nIt is shown once; only its hash is stored.`,
      created,
    );
    return 0;
  },

  "tokens list": async ({ config, options, io }) => {
    const projectId = need(options, "project");
    const rows = await withServices(config, (c) => listTokens(c, projectId));
    io.out(rows.map((r) => `${r.id}  ${r.display_prefix}…  ${r.permissions.join(",").padEnd(13)} ${r.state.padEnd(7)}${r.parent_id ? ` child of ${r.parent_id}` : ""}${r.name ? `  ${r.name}` : ""}`).join("\n") || "No tokens.", rows);
    return 0;
  },

  "tokens revoke": async ({ config, args, io }) => {
    const id = needArg(args, "tokens revoke TOKEN_ID");
    const row = await withServices(config, (c) => revokeToken(c, id, cliActor()));
    io.out(`Revoked ${id}; requests with it are refused from now on.`, row);
    return 0;
  },

  "verify-ledger": async ({ config, io }) => {
    const result = await withServices(config, async (c) => c.ledger.verify());
    io.out(
      result.ok
        ? `Ledger verified: ${result.projects} project balances match ${result.entries} journal entries; all invariants hold.`
        : `Ledger problems (${result.problems.length}):\n${result.problems.map((p) => `  ${p.check}: ${p.detail}`).join("\n")}`,
      result,
    );
    return result.ok ? 0 : 1;
  },
};

async function setPaused(config: CommandInput["config"], args: string[], io: CommandIo, paused: boolean): Promise<number> {
  const id = needArg(args, `projects ${paused ? "pause" : "resume"} ID`);
  const project = await withServices(config, (c) => setProjectPaused(c, id, paused, cliActor()));
  io.out(`Project ${id} ${paused ? "paused: payments are refused" : "resumed"}.`, project);
  return 0;
}

/** A flag whose value a service parser rejects: the parser's message, named after the flag. */
function parseOption<T>(flag: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new UsageError(`--${flag}: ${(err as Error).message}`);
  }
}
