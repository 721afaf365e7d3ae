/**
 * `agentwallet admin credentials create|list|revoke`: the operators' admin credentials the admin API
 * and the console's operator sign-in accept (services/adminCredentials.ts). Only this CLI, run where the
 * database is, creates one: it is the root of trust.
 */
import { type Command, cliActor, needArg, withServices } from "./command.ts";
import { createAdminCredential, listAdminCredentials, revokeAdminCredential } from "../services/adminCredentials.ts";
import { listAudit } from "../services/audit.ts";

export const adminCommands: Record<string, Command> = {
  "admin credentials create": async ({ config, options, io }) => {
    const created = await withServices(config, (c) => createAdminCredential(c, { name: typeof options.name === "string" ? options.name : undefined, role: typeof options.role === "string" ? options.role : undefined }, cliActor()));
    io.out(
      `Admin credential ${created.id} (${created.name}, role ${created.role}):\n\n  ${created.credential}\n\nIt is shown once; only its hash is stored. Send it as \`Authorization: Bearer …\` to /v1/admin/…, or sign in to /console as the operator with it.`,
      created,
    );
    return 0;
  },

  "admin credentials list": async ({ config, io }) => {
    const rows = await withServices(config, (c) => listAdminCredentials(c));
    io.out(rows.map((r) => `${r.id}  ${r.display_prefix}…  ${r.state.padEnd(8)} ${r.role.padEnd(8)} ${r.name}`).join("\n") || "No admin credentials.", rows);
    return 0;
  },

  "admin credentials revoke": async ({ config, args, io }) => {
    const id = needArg(args, "admin credentials revoke ID");
    const row = await withServices(config, (c) => revokeAdminCredential(c, id, cliActor()));
    io.out(`Revoked ${id}; the admin API and the console refuse it from now on.`, row);
    return 0;
  },

  "audit list": async ({ config, options, io }) => {
    const str = (v: unknown) => (typeof v === "string" ? v : undefined);
    const page = await withServices(config, (c) =>
      listAudit(c, { projectId: str(options.project), action: str(options.action), before: options.before === undefined ? undefined : Number(options.before), limit: options.limit === undefined ? undefined : Number(options.limit) }),
    );
    const lines = page.data.map((e) => `${e.seq}  ${e.at}  ${e.actor.name} (${e.actor.id}${e.actor.role ? `, ${e.actor.role}` : ""}${e.actor.ip ? ` from ${e.actor.ip}` : ""})  ${e.action} ${e.target_id}${e.project_id ? ` in ${e.project_id}` : ""}\n    ${JSON.stringify(e.before)} -> ${JSON.stringify(e.after)}`);
    if (page.next_before) lines.push(`More: agentwallet audit list --before ${page.next_before}`);
    io.out(lines.join("\n") || "No audit entries.", page);
    return 0;
  },
};
