/**
 * `agentwallet`: the admin CLI. Every command takes `--json` for scripts and `--data-dir DIR`
 * (default ./.agentwallet or AGENTWALLET_DATA_DIR); DATABASE_URL selects PostgreSQL.
 */
import { parseArgs } from "node:util";
import { ConfigError, loadConfig } from "../config.ts";
import { commands, type CommandIo } from "./commands.ts";

const USAGE = `Usage: agentwallet <command> [options]

Commands:
  serve [--port N] [--host H] [--data-dir DIR]     start the API (sandbox when BASE_RPC_URL is unset)
  migrate                                          apply database migrations
  projects create --name NAME [--plan free|pro|business]
  projects list
  projects pause ID | projects resume ID
  tokens create --project ID --permissions read,pay,x402 [--expires-in 30d]
  tokens list --project ID
  tokens revoke TOKEN_ID
  verify-ledger                                    recompute balances from the journal
  fund --project ID --amount-usdc N                sandbox: mint test USDC to the project's deposit address
  sandbox info                                     sandbox: chain, contracts and URLs of the running sandbox
  workers run-once                                 move every open payment forward once
  reconcile                                        compare on-chain wallet balances with the ledger

Global options: --json, --data-dir DIR`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
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
      "amount-usdc": { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
  });
  if (values.help || positionals.length === 0) {
    console.log(USAGE);
    return positionals.length === 0 && !values.help ? 2 : 0;
  }
  const key = positionals.slice(0, 2).join(" ");
  const command = commands[key] ?? commands[positionals[0]!];
  if (!command) {
    console.error(`Unknown command: ${positionals.join(" ")}\n\n${USAGE}`);
    return 2;
  }
  const args = positionals.slice(commands[key] ? 2 : 1);
  const port = values.port === undefined ? undefined : Number(values.port);
  if (port !== undefined && !(Number.isInteger(port) && port >= 0 && port <= 65535)) {
    console.error("--port must be an integer from 0 to 65535");
    return 2;
  }
  const config = loadConfig(process.env, { dataDir: values["data-dir"], port, host: values.host });
  const io: CommandIo = {
    json: values.json ?? false,
    out(human, data) {
      if (values.json) process.stdout.write(`${JSON.stringify(data, null, 2)}\n`);
      else process.stdout.write(`${human}\n`);
    },
  };
  return command({ config, args, options: values as Record<string, string | boolean | undefined>, io });
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== -1) process.exitCode = code;
  },
  (err: unknown) => {
    if (err instanceof ConfigError || (err as Error)?.name === "CliError") console.error(`error: ${(err as Error).message}`);
    else console.error(err);
    process.exitCode = 1;
  },
);
