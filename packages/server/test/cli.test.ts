import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { createPgSchema, dialects } from "./support/db.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../..");
const bin = join(root, "packages/server/bin/agentwallet.js");

/** Each command is a Node process that loads the service: about a second alone, many beside a busy suite. */
const slow = 240_000;

type Outcome = { code: number; stdout: string; stderr: string };

/** Runs the CLI to completion, whatever its exit code. DATABASE_URL is unset unless `env` sets it. */
async function exec(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, BASE_RPC_URL: "", ...env, DATABASE_URL: env.DATABASE_URL ?? "" }, timeout: 30_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

async function cli(dataDir: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const r = await exec([...args, "--json", "--data-dir", dataDir], env);
  if (r.code !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout);
}

/** Exactly one line on stderr besides the database line, `error: …`, and no stack trace. */
function expectOneErrorLine(r: Outcome, pattern: RegExp): void {
  expect(r.code).not.toBe(0);
  const lines = r.stderr.split("\n").filter((line) => line !== "" && !line.startsWith("database: "));
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(/^error: /);
  expect(lines[0]).toMatch(pattern);
  expect(r.stderr).not.toMatch(/\n\s+at /);
  expect(r.stdout).toBe("");
}

describe.each(dialects)("agentwallet CLI on %s", (dialect) => {
  const dir = mkdtempSync(join(tmpdir(), "aw-cli-"));
  const cleanups: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanups) await c();
    rmSync(dir, { recursive: true, force: true });
  });
  async function database(): Promise<NodeJS.ProcessEnv> {
    if (dialect === "sqlite") return {};
    const s = await createPgSchema();
    cleanups.push(s.drop);
    return { DATABASE_URL: s.url };
  }

  test("projects, tokens and verify-ledger, with one JSON shape per object", async () => {
    const env = await database();
    expect(await cli(dir, ["migrate"], env)).toEqual({ ok: true, dialect });
    const p = await cli(dir, ["projects", "create", "--name", "Acme agent", "--plan", "pro"], env);
    const projectShape = { id: expect.stringMatching(/^prj_/), name: "Acme agent", plan: "pro", paused: false, wallet_index: expect.any(Number), wallet_address: null, spending_controls: null, created_at: expect.any(String) };
    expect(p).toEqual(projectShape);
    const list = await cli(dir, ["projects", "list"], env);
    expect(list.find((x: { id: string }) => x.id === p.id)).toEqual(p);
    expect(await cli(dir, ["projects", "pause", p.id], env)).toEqual({ ...p, paused: true });
    expect((await cli(dir, ["projects", "list"], env)).find((x: { id: string }) => x.id === p.id)).toEqual({ ...p, paused: true });
    expect(await cli(dir, ["projects", "resume", p.id], env)).toEqual(p);

    const tok = await cli(dir, ["tokens", "create", "--project", p.id, "--permissions", "read,pay", "--expires-in", "30d"], env);
    expect(tok.token).toMatch(/^aw_test_[0-9A-Za-z]{38}$/);
    expect(tok.permissions).toEqual(["read", "pay"]);
    expect(Date.parse(tok.expires_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const { token, ...shown } = tok;
    expect(shown).toEqual({ id: expect.stringMatching(/^tok_/), project_id: p.id, display_prefix: token.slice(0, shown.display_prefix.length), permissions: ["read", "pay"], spending_controls: null, created_at: expect.any(String), expires_at: tok.expires_at, revoked_at: null, state: "active" });
    const tokens = await cli(dir, ["tokens", "list", "--project", p.id], env);
    expect(tokens).toEqual([shown]);
    expect(JSON.stringify(tokens)).not.toContain(token.slice(12));
    const revoked = await cli(dir, ["tokens", "revoke", tok.id], env);
    expect(revoked).toEqual({ ...shown, revoked_at: expect.any(String), state: "revoked" });
    expect(await cli(dir, ["tokens", "list", "--project", p.id], env)).toEqual([revoked]);

    const v = await cli(dir, ["verify-ledger"], env);
    expect(v).toMatchObject({ ok: true, problems: [] });
  }, slow);

  test.runIf(dialect === "sqlite")("admin credentials: created once as aw_admin_…, stored as a hash, listed without it, revoked", async () => {
    const at = join(dir, "admin");
    await cli(at, ["migrate"]);
    const created = await cli(at, ["admin", "credentials", "create", "--name", "ops"]);
    expect(created).toEqual({ id: expect.stringMatching(/^adm_/), name: "ops", display_prefix: created.credential.slice(0, 13), created_at: expect.any(String), revoked_at: null, state: "active", credential: expect.stringMatching(/^aw_admin_/) });
    const { credential, ...shown } = created;
    expect(await cli(at, ["admin", "credentials", "list"])).toEqual([shown]);
    for (const file of readdirSync(at).filter((f) => f.startsWith("agentwallet"))) expect(readFileSync(join(at, file)).includes(credential.slice(13))).toBe(false);
    expect(await cli(at, ["admin", "credentials", "revoke", shown.id])).toEqual({ ...shown, revoked_at: expect.any(String), state: "revoked" });
    expectOneErrorLine(await exec(["admin", "credentials", "revoke", shown.id, "--data-dir", at]), /was revoked at/);
  }, slow);

  // The messages come from the CLI layer, the same on both databases.
  test.runIf(dialect === "sqlite")("every error is one `error:` line and a non-zero exit", async () => {
    const env = await database();
    await cli(dir, ["migrate"], env);
    const p = await cli(dir, ["projects", "create", "--name", "errors"], env);
    const at = ["--data-dir", dir];
    expectOneErrorLine(await exec(["tokens", "create", "--project", p.id, "--permissions", "admin", ...at], env), /--permissions: .*subset of read,pay,x402/);
    expectOneErrorLine(await exec(["tokens", "create", "--project", p.id, "--permissions", "read", "--expires-in", "forever", ...at], env), /--expires-in: duration must look like 30d/);
    expectOneErrorLine(await exec(["tokens", "create", "--project", "prj_missing", "--permissions", "read", ...at], env), /no project with id prj_missing/);
    expectOneErrorLine(await exec(["projects", "pause", "prj_missing", ...at], env), /no project with id/);
    expectOneErrorLine(await exec(["projects", "create", ...at], env), /--name is required/);
    expectOneErrorLine(await exec(["tokens", "revoke", "tok_missing", "--json", ...at], env), /no active token/);
    const unknown = await exec(["frobnicate", ...at], env);
    expectOneErrorLine(unknown, /unknown command "frobnicate"/);
    expect(unknown.code).toBe(2);
    const option = await exec(["projects", "list", "--frob", ...at], env);
    expectOneErrorLine(option, /Unknown option '--frob'/);
    expect(option.code).toBe(2);
    expectOneErrorLine(await exec(["serve", "--port", "99999", ...at], env), /--port must be an integer/);
  }, slow);
});

describe("the CLI names the database it uses and never creates one by accident", () => {
  const dir = mkdtempSync(join(tmpdir(), "aw-cli-db-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("without a database: a clear error naming the SQLite path and DATABASE_URL, and no file created", async () => {
    const empty = join(dir, "never-created");
    const sqlitePath = join(empty, "agentwallet.db");
    for (const args of [["projects", "list"], ["tokens", "list", "--project", "prj_x"], ["workers", "run-once", "--json"]]) {
      const r = await exec([...args, "--data-dir", empty]);
      expect(r.stderr.split("\n")[0]).toBe(`database: SQLite ${sqlitePath}`);
      expectOneErrorLine(r, new RegExp(`no Agent Wallet database at ${sqlitePath}; set DATABASE_URL=postgres://`));
      expect(r.stdout).not.toContain("No projects.");
    }
    expect(existsSync(sqlitePath)).toBe(false);
    // `migrate` creates it; then the same command works and names it.
    expect((await exec(["migrate", "--data-dir", empty])).code).toBe(0);
    const listed = await exec(["projects", "list", "--data-dir", empty]);
    expect(listed).toEqual({ code: 0, stdout: "No projects.\n", stderr: `database: SQLite ${sqlitePath}\n` });
  }, slow);

  test("PostgreSQL: the URL is named with its password hidden; an empty schema is refused, not migrated", async () => {
    const s = await createPgSchema();
    try {
      const url = new URL(s.url);
      url.password = "hunter2-secret";
      const env = { DATABASE_URL: url.toString() };
      const r = await exec(["projects", "list", "--data-dir", dir], env);
      expect(r.stderr).not.toContain("hunter2-secret");
      expect(r.stderr.split("\n")[0]).toMatch(/^database: PostgreSQL postgres:\/\/postgres:\*\*\*@127\.0\.0\.1/);
      expectOneErrorLine(r, /no Agent Wallet ledger in PostgreSQL postgres:\/\/postgres:\*\*\*@.*check DATABASE_URL/);
      expect(existsSync(join(dir, "agentwallet.db"))).toBe(false);
      expect((await exec(["migrate", "--data-dir", dir], env)).code).toBe(0);
      expect(await exec(["projects", "list", "--data-dir", dir], env)).toMatchObject({ code: 0, stdout: "No projects.\n" });
    } finally {
      await s.drop();
    }
  }, slow);

  test("an unreachable PostgreSQL is one error line, password hidden", async () => {
    const r = await exec(["projects", "list", "--data-dir", dir], { DATABASE_URL: "postgres://agent:hunter2-secret@127.0.0.1:1/wallet" });
    expect(r.stderr.split("\n")[0]).toBe("database: PostgreSQL postgres://agent:***@127.0.0.1:1/wallet");
    expectOneErrorLine(r, /ECONNREFUSED/);
    expect(r.stderr).not.toContain("hunter2-secret");
  });
});
