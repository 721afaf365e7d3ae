import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, test } from "vitest";

const run = promisify(execFile);
const root = resolve(import.meta.dirname, "../../..");
const bin = join(root, "packages/server/bin/agentwallet.js");

async function cli(dataDir: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const { stdout } = await run(process.execPath, [bin, ...args, "--json", "--data-dir", dataDir], { cwd: root, env: { ...process.env, ...env, DATABASE_URL: env.DATABASE_URL ?? "" }, timeout: 30_000 });
  return JSON.parse(stdout);
}

describe("agentwallet CLI", () => {
  const dir = mkdtempSync(join(tmpdir(), "aw-cli-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  test("projects, tokens and verify-ledger, with --json output", async () => {
    expect(await cli(dir, ["migrate"])).toEqual({ ok: true, dialect: "sqlite" });
    const p = await cli(dir, ["projects", "create", "--name", "Acme agent", "--plan", "pro"]);
    expect(p).toMatchObject({ name: "Acme agent", plan: "pro", paused: 0 });
    const list = await cli(dir, ["projects", "list"]);
    expect(list.map((x: { id: string }) => x.id)).toContain(p.id);
    expect(await cli(dir, ["projects", "pause", p.id])).toEqual({ id: p.id, paused: true });
    expect((await cli(dir, ["projects", "list"])).find((x: { id: string }) => x.id === p.id).paused).toBe(true);
    expect(await cli(dir, ["projects", "resume", p.id])).toEqual({ id: p.id, paused: false });

    const tok = await cli(dir, ["tokens", "create", "--project", p.id, "--permissions", "read,pay", "--expires-in", "30d"]);
    expect(tok.token).toMatch(/^aw_test_[0-9A-Za-z]{38}$/);
    expect(tok.permissions).toEqual(["read", "pay"]);
    expect(Date.parse(tok.expires_at) - Date.now()).toBeGreaterThan(29 * 86_400_000);
    const tokens = await cli(dir, ["tokens", "list", "--project", p.id]);
    expect(tokens).toHaveLength(1);
    expect(JSON.stringify(tokens)).not.toContain(tok.token.slice(12));
    expect(tokens[0]).toMatchObject({ id: tok.id, state: "active", permissions: ["read", "pay"] });
    expect(await cli(dir, ["tokens", "revoke", tok.id])).toEqual({ id: tok.id, revoked: true });
    expect((await cli(dir, ["tokens", "list", "--project", p.id]))[0].state).toBe("revoked");

    const v = await cli(dir, ["verify-ledger"]);
    expect(v).toMatchObject({ ok: true, problems: [] });
  });

  test("errors are clear and exit non-zero", async () => {
    await expect(cli(dir, ["tokens", "create", "--project", "prj_x", "--permissions", "read,admin"])).rejects.toThrow(/subset of read,pay,x402/);
    await expect(cli(dir, ["projects", "pause", "prj_missing"])).rejects.toThrow(/no project with id/);
    await expect(cli(dir, ["frobnicate"])).rejects.toThrow(/Unknown command/);
  });
});
