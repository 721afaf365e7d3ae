/**
 * `agentwallet admin credentials create|list|revoke`: the operators' admin credentials the admin API
 * and the console's operator sign-in accept (services/adminCredentials.ts). Only this CLI, run where the
 * database is, creates one: it is the root of trust.
 */
import { type Command, needArg, withServices } from "./command.ts";
import { createAdminCredential, listAdminCredentials, revokeAdminCredential } from "../services/adminCredentials.ts";

export const adminCommands: Record<string, Command> = {
  "admin credentials create": async ({ config, options, io }) => {
    const created = await withServices(config, (c) => createAdminCredential(c, { name: typeof options.name === "string" ? options.name : undefined }));
    io.out(
      `Admin credential ${created.id} (${created.name}):\n\n  ${created.credential}\n\nIt is shown once; only its hash is stored. Send it as \`Authorization: Bearer …\` to /v1/admin/…, or sign in to /console as the operator with it.`,
      created,
    );
    return 0;
  },

  "admin credentials list": async ({ config, io }) => {
    const rows = await withServices(config, (c) => listAdminCredentials(c));
    io.out(rows.map((r) => `${r.id}  ${r.display_prefix}…  ${r.state.padEnd(8)} ${r.name}`).join("\n") || "No admin credentials.", rows);
    return 0;
  },

  "admin credentials revoke": async ({ config, args, io }) => {
    const id = needArg(args, "admin credentials revoke ID");
    const row = await withServices(config, (c) => revokeAdminCredential(c, id));
    io.out(`Revoked ${id}; the admin API and the console refuse it from now on.`, row);
    return 0;
  },
};
