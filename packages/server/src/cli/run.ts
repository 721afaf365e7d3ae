/**
 * `agentwallet`: the admin CLI, as a function of its arguments, environment and output streams, so the same
 * code runs as the `agentwallet` process (main.ts) and inside a test. Every command takes `--json` for scripts and `--data-dir DIR`
 * (default ./.agentwallet or AGENTWALLET_DATA_DIR); DATABASE_URL selects PostgreSQL.
 */
import { parseArgs } from "node:util";
import { describeDatabase, loadConfig, redactUrl } from "../config.ts";
import { ledgerExists } from "../ledger/open.ts";
import { CliError, type CommandIo, UsageError, configOfDeployment, readDeployment } from "./command.ts";
import { COMMAND_HELP } from "./help.ts";
import { commands } from "./commands.ts";
import type { CommandInput } from "./command.ts";
import { CONTROL_OPTIONS } from "./spendingCommands.ts";
import { WEBHOOK_OPTIONS } from "./webhookCommands.ts";

const USAGE = `Usage: agentwallet <command> [options]

Commands:
  serve [--port N] [--host H] [--data-dir DIR]     start the API (sandbox when BASE_RPC_URL is unset)
  migrate                                          apply database migrations
  init                                             set up a deployment: database, its mode, master key file, first admin credential
  projects create --name NAME [--plan free|pro|business]
  projects list
  projects pause ID | projects resume ID
  tokens create --project ID --permissions read,pay,x402 [--expires-in 30d]
  tokens list --project ID
  tokens revoke TOKEN_ID
  verify-ledger                                    recompute balances from the journal
  fund --project ID --amount-usdc N                sandbox: mint test USDC to the project's deposit address
  sandbox info                                     sandbox: chain, contracts and URLs of the running sandbox
  tokens create … [controls]                       controls: --max-payment-usd N --daily-limit-usd N --weekly-limit-usd N
                                                   --monthly-limit-usd N --total-limit-usd N --allow HOST|*.HOST|0x…|bank:ROUTING:ACCOUNT
                                                   (repeat; "any" clears) --block … --rails x402,usdc_transfer,fiat
                                                   --approval-above-usd N ("none" removes a value; --clear-limits)
  tokens update TOKEN_ID [controls]                change a token's spending controls (only the options given)
  projects limits PROJECT_ID [controls]            controls every token of the project obeys too (the stricter wins)
  payments pending [--project ID]                  payments waiting for a person's approval
  payments approve|deny PAYMENT_ID [--reason TEXT] decide one (approved: the server sends it; denied: failed, credited back)
  payments resolve PAYMENT_ID --as failed|completed --reason TEXT [--tx-hash 0x…]
                                                   end by hand a payment whose rail state does not parse
  refusals list [--project ID] [--limit N]         payment attempts the spending controls refused (newest first)
  webhooks create --project ID --url URL [--events payment.completed,…]   send the project's events there (prints the whsec_ secret once)
  webhooks list --project ID                       endpoints, with their state (disabled after days of failures)
  webhooks delete|enable ENDPOINT_ID               stop sending to one, or send again to a disabled one
  webhooks deliveries ENDPOINT_ID [--limit N]      its newest deliveries and their attempts
  webhooks redeliver EVENT_ID                      send an event again to its endpoints
  admin credentials create [--name N] [--role R]   an operator's admin credential (aw_admin_…) for /v1/admin/… and
                                                   the console's operator sign-in; printed once, only its hash is stored;
                                                   role viewer (reads), approver (also decides payments) or admin (default)
  admin credentials list | admin credentials revoke ID
  audit list [--project ID] [--action A] [--limit N] [--before SEQ]
                                                   who changed what: every operator and token-management change, newest first
  workers run-once                                 fill lost relayer nonces, move every open payment forward once
  reconcile                                        compare on-chain wallet balances with the ledger
  verify-evidence --project ID | --file EXPORT.jsonl [--offline]
                                                   check a project's evidence: its hash chain, every signature, every log on-chain
  export --project ID --format jsonl|csv [--out FILE]   the project's payments for accounting (jsonl: with its evidence)
  doctor                                           check the deployment's settings against the database, chain and disk

Global options: --json, --data-dir DIR, --help (after a command: that command's options and an example)

The database is SQLite in the data directory unless DATABASE_URL names a PostgreSQL one; every command
says which on stderr. Only serve, migrate and init create a database that does not exist yet.`;

/** Commands that may create the database (and migrate it); every other one needs an existing ledger. */
const CREATES_DATABASE = new Set(["serve", "migrate", "init"]);
/** Commands that do not open the database at all. */
const NO_DATABASE = new Set(["sandbox info", "doctor"]);
/**
 * Commands that sign or reach the chain, and so run in the mode of their configuration (live mode asks for
 * its signing settings). Every other command signs nothing and runs in the mode its database records,
 * whatever the shell says (services/deployment.ts).
 */
const SIGNS = new Set(["serve", "workers run-once", "reconcile", "fund"]);


/** Where a run of the CLI reads its environment and writes its output: the process's own in main.ts. */
export type CliProcess = {
  env: NodeJS.ProcessEnv;
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
};

/** Runs one command line to its exit code; an expected failure is one `error: …` line on stderr. */
export async function runCli(argv: string[], proc: CliProcess): Promise<number> {
  try {
    return await dispatch(argv, proc);
  } catch (err) {
    return reportError(err, proc);
  }
}

async function dispatch(argv: string[], proc: CliProcess): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        json: { type: "boolean", default: false },
        "data-dir": { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        name: { type: "string" },
        plan: { type: "string" },
        project: { type: "string" },
        permissions: { type: "string" },
        "expires-in": { type: "string" },
        ...CONTROL_OPTIONS,
        ...WEBHOOK_OPTIONS,
        "amount-usdc": { type: "string" },
        as: { type: "string" },
        reason: { type: "string" },
        role: { type: "string" },
        action: { type: "string" },
        before: { type: "string" },
        "tx-hash": { type: "string" },
        file: { type: "string" },
        format: { type: "string" },
        out: { type: "string" },
        offline: { type: "boolean" },
        help: { type: "boolean", short: "h", default: false },
      },
    });
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split(". To specify a positional")[0]} (agentwallet --help lists the options)`);
  }
  const { values, positionals } = parsed;
  if (positionals.length === 0) {
    (values.help ? proc.stdout : proc.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  // The longest command the words name: `admin credentials create`, `tokens list`, `serve`.
  const words = [3, 2, 1].find((n) => positionals.length >= n && commands[positionals.slice(0, n).join(" ")]) ?? 1;
  const name = positionals.slice(0, words).join(" ");
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command "${positionals.join(" ")}" (agentwallet --help lists the commands)`);
  if (values.help) {
    proc.stdout.write(`${COMMAND_HELP[name] ?? USAGE}\n`);
    return 0;
  }
  const args = positionals.slice(words);
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    throw new UsageError(`--port must be an integer from 0 to 65535 (got "${values.port}")`);
  }
  const shellConfig = loadConfig(proc.env, { dataDir: values["data-dir"], port, host: values.host }, { signs: SIGNS.has(name) });
  // Which database this is, before anything else (`serve` logs it as its first line instead).
  if (name !== "serve") proc.stderr.write(`database: ${describeDatabase(shellConfig)}\n`);
  if (!CREATES_DATABASE.has(name) && !NO_DATABASE.has(name) && !(await ledgerExists(shellConfig))) {
    throw new CliError(
      shellConfig.databaseUrl
        ? `no Agent Wallet ledger in PostgreSQL ${redactUrl(shellConfig.databaseUrl)}; check DATABASE_URL, or create the tables with \`agentwallet migrate\``
        : `no Agent Wallet database at ${shellConfig.sqlitePath}; set DATABASE_URL=postgres://… for a PostgreSQL deployment, --data-dir DIR (or AGENTWALLET_DATA_DIR) for another SQLite directory, or create this one with \`agentwallet migrate\``,
    );
  }
  // The deployment's record decides the mode of what the command issues; `serve` and `migrate` write it.
  const deployment = CREATES_DATABASE.has(name) || NO_DATABASE.has(name) ? undefined : await readDeployment(shellConfig);
  const config = deployment ? configOfDeployment(shellConfig, deployment, !SIGNS.has(name)) : shellConfig;
  const io: CommandIo = {
    json: values.json ?? false,
    out(human, data) {
      if (values.json) proc.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
      else proc.stdout.write(`${human}\n`);
    },
  };
  return command({ config, deployment, args, options: values as CommandInput["options"], io });
}

/**
 * Every failure is one line on stderr, `error: …`, and a non-zero exit code (2 for usage mistakes): no stack
 * trace for a wrong flag or an unreachable database. AGENTWALLET_DEBUG=1 adds the stack for bug reports.
 */
function reportError(err: unknown, proc: CliProcess): number {
  const message = err instanceof Error ? err.message || err.name : String(err);
  const oneLine = message.split("\n").map((line) => line.trim()).filter(Boolean).join("; ");
  proc.stderr.write(`error: ${oneLine || "unknown failure"}\n`);
  if (proc.env.AGENTWALLET_DEBUG === "1" && err instanceof Error && err.stack) proc.stderr.write(`${err.stack}\n`);
  return err instanceof UsageError ? 2 : 1;
}
