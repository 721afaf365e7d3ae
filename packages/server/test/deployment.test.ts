// The deployment's record on databases that existed before it (migration 0020 adds an empty table): the first
// start after the upgrade records its own mode, as the server that ran on it before was the authority on it;
// a database holding live tokens is never taken by a sandbox (the sandbox never issued aw_live_ tokens).
import { afterEach, describe, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import { newId, systemClock } from "../src/ids.ts";
import type { Ledger } from "../src/ledger/store.ts";
import { DeploymentMismatchError, claimDeployment } from "../src/services/deployment.ts";
import { createToken } from "../src/services/tokens.ts";
import { createTestDb, dialects, ledgerOn, type TestDb } from "./support/db.ts";

const sandbox = loadConfig({ AGENTWALLET_DATA_DIR: "/nonexistent-test-dir" });
const live = { ...sandbox, mode: "live" as const };

describe.each(dialects)("the deployment record on %s", (dialect) => {
  let db: TestDb | undefined;
  afterEach(async () => {
    await db?.drop();
    db = undefined;
  });
  async function ledgerWithTokens(modes: ("live" | "test")[]): Promise<Ledger> {
    db = await createTestDb(dialect);
    const ledger = ledgerOn(db);
    const project = await ledger.projects.create({ name: "before the record", plan: "free" });
    for (const mode of modes) await createToken({ ledger, clock: systemClock, newId }, { projectId: project.id, permissions: ["read"], mode });
    return ledger;
  }
  const deps = (ledger: Ledger) => ({ ledger, clock: systemClock, newId });

  test("behavior: an existing database takes the mode of its first start, and keeps it", async () => {
    // Test tokens on a live deployment are what the CLI issued before the record: they do not make it a sandbox.
    const ledger = await ledgerWithTokens(["test"]);
    expect(await ledger.deployment.get()).toBeUndefined();
    expect(await claimDeployment(deps(ledger), live, "this database")).toMatchObject({ mode: "live", chain_id: 8453 });
    expect(await claimDeployment(deps(ledger), live, "this database")).toMatchObject({ mode: "live" });
    await expect(claimDeployment(deps(ledger), sandbox, "this database")).rejects.toThrow(/this database holds a live deployment/);
  });

  test("error: a sandbox's first start on a database with live tokens is refused and records nothing", async () => {
    const ledger = await ledgerWithTokens(["live", "test"]);
    const refused = claimDeployment(deps(ledger), sandbox, "this database");
    await expect(refused).rejects.toBeInstanceOf(DeploymentMismatchError);
    await expect(refused).rejects.toThrow(/holds live API tokens \(aw_live_…\) but records no mode yet/);
    expect(await ledger.deployment.get()).toBeUndefined();
    expect(await claimDeployment(deps(ledger), live, "this database")).toMatchObject({ mode: "live" });
  });

  test("behavior: a new database is recorded by its first start, test for the sandbox", async () => {
    const ledger = await ledgerWithTokens([]);
    expect(await claimDeployment(deps(ledger), sandbox, "this database")).toMatchObject({ mode: "test" });
    await expect(claimDeployment(deps(ledger), live, "this database")).rejects.toThrow(/holds a test deployment .* runs in live mode/);
  });
});
