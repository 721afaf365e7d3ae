/** The `agentwallet` process: runs the command line and exits with its code (`serve` keeps running, -1). */
import { runCli } from "./run.ts";

const code = await runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
if (code !== -1) process.exitCode = code;
