/**
 * `agentwallet init` on real databases: it sets up a live deployment once (database, recorded mode, the
 * master mnemonic's file, the first admin credential) and, run again, changes nothing and says so.
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, describe, expect, test } from "vitest";
import { dialects, type TestDialect } from "../support/db.ts";
import { deploymentPlaces, runCommand as exec } from "../support/deployment.ts";

/** A public test key (anvil's account 1): never holds value. */
const RELAYER_KEY = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
const KNOWN_MNEMONIC = "test test test test test test test test test test test junk";

const places = deploymentPlaces("aw-init-");
afterAll(() => places.removeAll());

describe.each(dialects)("agentwallet init on %s", (dialect: TestDialect) => {
  /** A live deployment's environment before init: no key file, no database; the RPC is never dialled by init. */
  async function liveEnv(): Promise<NodeJS.ProcessEnv & { dir: string }> {
    const { dir, databaseUrl } = await places.create(dialect);
    return { dir, DATABASE_URL: databaseUrl, AGENTWALLET_DATA_DIR: join(dir, "data"), BASE_RPC_URL: "http://127.0.0.1:1", AGENTWALLET_MASTER_MNEMONIC: "", AGENTWALLET_MASTER_MNEMONIC_FILE: join(dir, "keys", "master-mnemonic"), RELAYER_PRIVATE_KEY: "", TREASURY_ADDRESS: "" };
  }

  test("default: sets up the database, the key file and the first admin credential, and lists what is left", async () => {
    const env = await liveEnv();
    const r = await exec(["init", "--json"], env);
    expect(r.code, r.stderr).toBe(0);
    const report = JSON.parse(r.stdout);
    expect(report).toMatchObject({ dialect, mode: "live", chain_id: 8453, mode_recorded: true, changed: true, mnemonic: { source: "file", path: env.AGENTWALLET_MASTER_MNEMONIC_FILE, created: true } });
    expect(report.migrations_applied.length).toBeGreaterThan(10);
    expect(report.admin_credential.credential).toMatch(/^aw_admin_/);
    // The mnemonic: 24 words, readable by its owner only, in a directory of the owner's.
    const file = env.AGENTWALLET_MASTER_MNEMONIC_FILE!;
    expect(readFileSync(file, "utf8").trim().split(" ")).toHaveLength(24);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(env.dir, "keys")).mode & 0o777).toBe(0o700);
    expect(report.todo.join("\n")).toMatch(/Back up .*master-mnemonic offline[\s\S]*set RELAYER_PRIVATE_KEY[\s\S]*Set TREASURY_ADDRESS[\s\S]*agentwallet doctor/);
    // The credential is the deployment's: listed as active, the secret never stored.
    const list = JSON.parse((await exec(["admin", "credentials", "list", "--json"], env)).stdout);
    expect(list).toEqual([expect.objectContaining({ id: report.admin_credential.id, state: "active" })]);
  });

  test("behavior: run again, it changes nothing and says so", async () => {
    const env = await liveEnv();
    expect((await exec(["init"], env)).code).toBe(0);
    const mnemonic = readFileSync(env.AGENTWALLET_MASTER_MNEMONIC_FILE!, "utf8");
    const again = await exec(["init"], { ...env, RELAYER_PRIVATE_KEY: RELAYER_KEY });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/at the latest schema; already recorded as a live deployment on chain 8453/);
    expect(again.stdout).toMatch(/kept in .*master-mnemonic\./);
    expect(again.stdout).toMatch(/an active one exists; none created/);
    expect(again.stdout).toMatch(/Nothing changed: this deployment was initialized already\./);
    expect(again.stdout).toContain(`Fund the relayer ${privateKeyToAccount(RELAYER_KEY).address}`);
    expect(again.stdout).not.toMatch(/aw_admin_/);
    expect(readFileSync(env.AGENTWALLET_MASTER_MNEMONIC_FILE!, "utf8")).toBe(mnemonic);
    const json = JSON.parse((await exec(["init", "--json"], env)).stdout);
    expect(json).toMatchObject({ changed: false, mode_recorded: false, migrations_applied: [], admin_credential: null, mnemonic: { created: false } });
    expect(JSON.parse((await exec(["admin", "credentials", "list", "--json"], env)).stdout)).toHaveLength(1);
  });

  test("behavior: takes an existing mnemonic file as it is", async () => {
    const env = await liveEnv();
    mkdirSync(join(env.dir, "keys"), { mode: 0o700 });
    writeFileSync(env.AGENTWALLET_MASTER_MNEMONIC_FILE!, `${KNOWN_MNEMONIC}\n`, { mode: 0o600 });
    const r = JSON.parse((await exec(["init", "--json"], env)).stdout);
    expect(r.mnemonic).toEqual({ source: "file", path: env.AGENTWALLET_MASTER_MNEMONIC_FILE, created: false });
    expect(readFileSync(env.AGENTWALLET_MASTER_MNEMONIC_FILE!, "utf8")).toBe(`${KNOWN_MNEMONIC}\n`);
  });

  test("error: a key file that is not a mnemonic stops init before the database is created", async () => {
    const env = await liveEnv();
    mkdirSync(join(env.dir, "keys"), { mode: 0o700 });
    writeFileSync(env.AGENTWALLET_MASTER_MNEMONIC_FILE!, "not a mnemonic\n", { mode: 0o600 });
    const r = await exec(["init"], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error: master mnemonic from .*master-mnemonic must have 12-24 words/);
    if (dialect === "sqlite") expect(existsSync(join(env.AGENTWALLET_DATA_DIR!, "agentwallet.db"))).toBe(false);
    else expect((await exec(["projects", "list"], env)).stderr).toMatch(/no Agent Wallet ledger/);
  });

  test("error: a sandbox's database is refused under live settings", async () => {
    const env = await liveEnv();
    expect((await exec(["migrate"], { ...env, BASE_RPC_URL: "" })).code).toBe(0);
    const r = await exec(["init"], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/error: .* holds a test deployment .* this process runs in live mode/);
  });
});
