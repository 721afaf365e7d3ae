import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";
import { runCli } from "../src/cli/run.ts";
import { createPgSchema, dialects } from "./support/db.ts";
import { agentwalletBin } from "./support/testBuild.ts";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../..");
// The run's bundle of the service (support/testBuild.ts).
const bin = agentwalletBin();

/** A command in this process: about 100 ms. */
const slow = 60_000;
/** A command as a process of its own loads the whole service through tsx: seconds each on a busy machine. */
const spawned = 240_000;

type Outcome = { code: number; stdout: string; stderr: string };

/** The environment of a command: DATABASE_URL and BASE_RPC_URL are unset unless `env` sets them. */
function cliEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...process.env, BASE_RPC_URL: "", ...env, DATABASE_URL: env.DATABASE_URL ?? "" };
}

/** Runs the CLI's code in this process, as main.ts does, to its exit code. */
async function exec(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  const out = { stdout: "", stderr: "" };
  const code = await runCli(args, { env: cliEnv(env), stdout: { write: (s: string) => (out.stdout += s) }, stderr: { write: (s: string) => (out.stderr += s) } });
  return { code, ...out };
}

/** Runs the `agentwallet` binary as a process of its own, whatever its exit code: `serve`, and the exit codes themselves. */
async function spawnCli(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, [bin, ...args], { cwd: root, env: cliEnv(env), timeout: 120_000 });
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
    expect(await cli(dir, ["migrate"], env)).toEqual({ ok: true, dialect, mode: "test" });
    const p = await cli(dir, ["projects", "create", "--name", "Acme agent", "--plan", "pro"], env);
    const projectShape = { id: expect.stringMatching(/^prj_/), name: "Acme agent", plan: "pro", paused: false, wallet_index: expect.any(Number), wallet_address: null, spending_controls: null, created_at: expect.any(String) };
    expect(p).toEqual(projectShape);
    const list = await cli(dir, ["projects", "list"], env);
    expect(list.find((x: { id: string }) => x.id === p.id)).toEqual(p);
    expect(await cli(dir, ["projects", "pause", p.id], env)).toEqual({ ...p, paused: true });
    expect((await cli(dir, ["projects", "list"], env)).find((x: { id: string }) => x.id === p.id)).toEqual({ ...p, paused: true });
    expect(await cli(dir, ["projects", "resume", p.id], env)).toEqual(p);

    const tok = await cli(dir, ["tokens", "create", "--project", p.id, "--permissions", "read,pay", "--expires-in", "30d", "--name", "researcher"], env);
    expect(tok.token).toMatch(/^aw_test_[0-9A-Za-z]{38}$/);
    expect(tok.permissions).toEqual(["read", "pay"]);
    expect(Date.parse(tok.expires_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const { token, ...shown } = tok;
    expect(shown).toEqual({ id: expect.stringMatching(/^tok_/), project_id: p.id, display_prefix: token.slice(0, shown.display_prefix.length), name: "researcher", permissions: ["read", "pay"], spending_controls: null, parent_id: null, depth: 0, allowance_usd: null, created_at: expect.any(String), expires_at: tok.expires_at, revoked_at: null, state: "active" });
    const tokens = await cli(dir, ["tokens", "list", "--project", p.id], env);
    expect(tokens).toEqual([shown]);
    expect(JSON.stringify(tokens)).not.toContain(token.slice(12));
    const revoked = await cli(dir, ["tokens", "revoke", tok.id], env);
    expect(revoked).toEqual({ ...shown, revoked_at: expect.any(String), state: "revoked" });
    expect(await cli(dir, ["tokens", "list", "--project", p.id], env)).toEqual([revoked]);

    const v = await cli(dir, ["verify-ledger"], env);
    expect(v).toMatchObject({ ok: true, problems: [] });
  }, slow);

  // A shell holds no signing secret: the deployment's database says whether its tokens are live.
  const NO_SECRETS = { AGENTWALLET_MASTER_MNEMONIC: "", AGENTWALLET_MASTER_MNEMONIC_FILE: "", RELAYER_PRIVATE_KEY: "", TREASURY_ADDRESS: "" };
  const LIVE_SETTINGS = { BASE_RPC_URL: "http://127.0.0.1:1", AGENTWALLET_MASTER_MNEMONIC: "legal winner thank year wave sausage worth useful legal winner thank yellow", RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`, TREASURY_ADDRESS: "0x90F79bf6EB2c4f870365E785982E1f101E93b906" };

  test("behavior: on a database recorded live, projects and tokens need no secret and tokens are aw_live_", async () => {
    const at = join(dir, "live");
    const env = { ...(await database()), ...NO_SECRETS };
    // Migrated by the live deployment's configuration, without its secrets: recorded live.
    expect(await cli(at, ["migrate"], { ...env, BASE_RPC_URL: "http://127.0.0.1:1" })).toEqual({ ok: true, dialect, mode: "live" });
    // An operator's shell with only the database: no BASE_RPC_URL, no mnemonic, no relayer key.
    const p = await cli(at, ["projects", "create", "--name", "live agents"], env);
    const tok = await cli(at, ["tokens", "create", "--project", p.id, "--permissions", "read,pay"], env);
    expect(tok.token).toMatch(/^aw_live_[0-9A-Za-z]{38}$/);
    expect((await cli(at, ["tokens", "list", "--project", p.id], env))[0].display_prefix).toMatch(/^aw_live_/);
    // The same with BASE_RPC_URL in the shell and still no secret.
    const again = await cli(at, ["tokens", "create", "--project", p.id, "--permissions", "read"], { ...env, BASE_RPC_URL: "http://127.0.0.1:1" });
    expect(again.token).toMatch(/^aw_live_/);
    // Nothing of the sandbox's was made beside a live deployment (its key file above all).
    expect(existsSync(join(at, "master-mnemonic"))).toBe(false);
  }, slow);

  test("error: a live server refuses a test deployment's database and a sandbox refuses a live one", async () => {
    const testDb = join(dir, "recorded-test");
    const testEnv = { ...(await database()), ...NO_SECRETS };
    expect(await cli(testDb, ["migrate"], testEnv)).toMatchObject({ mode: "test" });
    const live = await spawnCli(["serve", "--port", "0", "--data-dir", testDb], { ...testEnv, ...LIVE_SETTINGS, LOG_LEVEL: "silent" });
    expectOneErrorLine(live, /holds a test deployment \(recorded .*\), and this process runs in live mode.*Run it in the sandbox \(BASE_RPC_URL unset\), or point DATABASE_URL \(or --data-dir\) at the live deployment's own database/);
    // The CLI with a live shell is refused the same way on that database.
    const p = await cli(testDb, ["projects", "create", "--name", "sandbox agents"], testEnv);
    expectOneErrorLine(await exec(["tokens", "create", "--project", p.id, "--permissions", "read", "--data-dir", testDb], { ...testEnv, BASE_RPC_URL: "http://127.0.0.1:1" }), /holds a test deployment/);

    const liveDb = join(dir, "recorded-live");
    const liveEnv = { ...(await database()), ...NO_SECRETS };
    expect(await cli(liveDb, ["migrate"], { ...liveEnv, BASE_RPC_URL: "http://127.0.0.1:1" })).toMatchObject({ mode: "live" });
    const sandbox = await spawnCli(["serve", "--port", "0", "--data-dir", liveDb], { ...liveEnv, LOG_LEVEL: "silent" });
    expectOneErrorLine(sandbox, /holds a live deployment \(recorded .*\), and this process runs in the sandbox \(BASE_RPC_URL unset\).*Run it in live mode/);
    expect(existsSync(join(liveDb, "sandbox.json"))).toBe(false);
  }, spawned);

  test.runIf(dialect === "sqlite")("admin credentials: created once as aw_admin_…, stored as a hash, listed without it, revoked", async () => {
    const at = join(dir, "admin");
    await cli(at, ["migrate"]);
    const created = await cli(at, ["admin", "credentials", "create", "--name", "ops"]);
    expect(created).toEqual({ id: expect.stringMatching(/^adm_/), name: "ops", role: "admin", display_prefix: created.credential.slice(0, 13), created_at: expect.any(String), revoked_at: null, state: "active", credential: expect.stringMatching(/^aw_admin_/) });
    const { credential, ...shown } = created;
    expect(await cli(at, ["admin", "credentials", "list"])).toEqual([shown]);
    for (const file of readdirSync(at).filter((f) => f.startsWith("agentwallet"))) expect(readFileSync(join(at, file)).includes(credential.slice(13))).toBe(false);
    expect(await cli(at, ["admin", "credentials", "revoke", shown.id])).toEqual({ ...shown, revoked_at: expect.any(String), state: "revoked" });
    expectOneErrorLine(await exec(["admin", "credentials", "revoke", shown.id, "--data-dir", at]), /was revoked at/);
    // A role, and the audit log of what the CLI did, with its user as the actor.
    expect(await cli(at, ["admin", "credentials", "create", "--name", "on-call", "--role", "approver"])).toMatchObject({ role: "approver" });
    expectOneErrorLine(await exec(["admin", "credentials", "create", "--role", "root", "--data-dir", at]), /role must be viewer, approver, admin/);
    const audit = (await cli(at, ["audit", "list"])) as { data: { action: string; target_id: string; actor: { id: string; role: null; ip: null } }[] };
    expect(audit.data.map((e) => [e.action, e.actor.id.startsWith("cli"), e.actor.role, e.actor.ip])).toEqual([["credential.created", true, null, null], ["credential.revoked", true, null, null], ["credential.created", true, null, null]]);
    expect(audit.data[1]!.target_id).toBe(shown.id);
  }, slow);

  // The messages come from the CLI layer, the same on both databases.
  test.runIf(dialect === "sqlite")("every error is one `error:` line and a non-zero exit", async () => {
    const env = await database();
    await cli(dir, ["migrate"], env);
    const p = await cli(dir, ["projects", "create", "--name", "errors"], env);
    const at = ["--data-dir", dir];
    // Usage mistakes exit 2 (README, "Admin CLI"); failures at run time exit 1.
    const usage = async (args: string[], pattern: RegExp) => {
      const r = await exec([...args, ...at], env);
      expectOneErrorLine(r, pattern);
      expect(r.code, args.join(" ")).toBe(2);
    };
    const failure = async (args: string[], pattern: RegExp) => {
      const r = await exec([...args, ...at], env);
      expectOneErrorLine(r, pattern);
      expect(r.code, args.join(" ")).toBe(1);
    };
    await usage(["tokens", "create", "--project", p.id, "--permissions", "admin"], /--permissions: .*subset of read,pay,x402/);
    await usage(["tokens", "create", "--project", p.id, "--permissions", "read", "--expires-in", "forever"], /--expires-in: duration must look like 30d/);
    await usage(["tokens", "create", "--project", p.id, "--permissions", "read", "--daily-limit-usd", "lots"], /--daily-limit-usd must be an amount in USD/);
    await usage(["tokens", "create", "--project", p.id, "--permissions", "read", "--allow", "bank:12:34"], /routing/i);
    await usage(["projects", "create"], /--name is required/);
    await usage(["tokens", "revoke"], /usage: agentwallet tokens revoke TOKEN_ID/);
    await usage(["payments", "approve"], /usage: agentwallet payments approve PAYMENT_ID/);
    await usage(["webhooks", "delete"], /usage: agentwallet webhooks delete ENDPOINT_ID/);
    await usage(["payments", "resolve"], /usage: agentwallet payments resolve PAYMENT_ID --as failed\|completed --reason TEXT/);
    await usage(["payments", "resolve", "pay_x", "--reason", "r"], /--as is required/);
    await usage(["payments", "resolve", "pay_x", "--as", "refunded", "--reason", "r"], /--as must be failed or completed/);
    await usage(["payments", "resolve", "pay_x", "--as", "failed"], /--reason is required/);
    await failure(["payments", "resolve", "pay_missing", "--as", "failed", "--reason", "looked at the chain"], /No payment pay_missing/);
    await failure(["tokens", "create", "--project", "prj_missing", "--permissions", "read"], /no project with id prj_missing/);
    await failure(["projects", "pause", "prj_missing"], /no project with id/);
    await failure(["tokens", "revoke", "tok_missing", "--json"], /no active token/);
    const unknown = await exec(["frobnicate", ...at], env);
    expectOneErrorLine(unknown, /unknown command "frobnicate"/);
    expect(unknown.code).toBe(2);
    const option = await exec(["projects", "list", "--frob", ...at], env);
    expectOneErrorLine(option, /Unknown option '--frob'/);
    expect(option.code).toBe(2);
    const port = await exec(["serve", "--port", "99999", ...at], env);
    expectOneErrorLine(port, /--port must be an integer/);
    expect(port.code).toBe(2);
  }, slow);

  test.runIf(dialect === "sqlite")("--help after a command prints that command's help, exit 0", async () => {
    const help = await exec(["tokens", "create", "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: agentwallet tokens create --project ID --permissions LIST/);
    for (const part of ["--expires-in", "--daily-limit-usd", "aw_live_", "Example:\n  npm run -s agentwallet -- tokens create"]) expect(help.stdout).toContain(part);
    expect(help.stdout).not.toContain("Commands:");
    const short = await exec(["webhooks", "deliveries", "-h"]);
    expect(short).toMatchObject({ code: 0, stderr: "" });
    expect(short.stdout).toMatch(/^Usage: agentwallet webhooks deliveries ENDPOINT_ID/);
    expect((await exec(["--help"])).stdout).toMatch(/^Usage: agentwallet <command>/);
    expect((await exec(["frobnicate", "--help"])).code).toBe(2);
  }, slow);

  test.runIf(dialect === "sqlite")("the agentwallet binary exits with the command's code and prints its lines", async () => {
    const usage = await spawnCli(["frobnicate"]);
    expectOneErrorLine(usage, /unknown command "frobnicate"/);
    expect(usage.code).toBe(2);
    const failed = await spawnCli(["projects", "list", "--data-dir", join(dir, "never-created")]);
    expectOneErrorLine(failed, /no Agent Wallet database at/);
    expect(failed.code).toBe(1);
    expect(await spawnCli(["--help"])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^Usage: agentwallet <command>/), stderr: "" });
  }, spawned);
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
