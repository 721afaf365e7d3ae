/**
 * The shipped systemd units (deploy/systemd/) pass `systemd-analyze verify`: known directives only, and
 * commands that exist (node at this machine's path in place of /usr/bin/node). Skipped only where systemd's
 * tools are not installed.
 */
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { promisify } from "node:util";
import { expect, test } from "vitest";

const run = promisify(execFile);
const dir = resolve(import.meta.dirname, "../../../../deploy/systemd");

function hasSystemdAnalyze(): boolean {
  try {
    execFileSync("systemd-analyze", ["--version"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

test.skipIf(!hasSystemdAnalyze())("default: every unit passes systemd-analyze verify (skipped: systemd-analyze is not installed here)", async () => {
  const units = readdirSync(dir).filter((f) => /\.(service|timer)$/.test(f));
  expect(units.sort()).toEqual(["agentwallet-reconcile.service", "agentwallet-reconcile.timer", "agentwallet.service"]);
  const tmp = mkdtempSync(join(tmpdir(), "aw-units-"));
  try {
    for (const u of units) writeFileSync(join(tmp, u), readFileSync(join(dir, u), "utf8").replaceAll("/usr/bin/node", process.execPath));
    const { stdout, stderr } = await run("systemd-analyze", ["verify", ...units.map((u) => join(tmp, u))], { timeout: 60_000 }).catch((err: { stdout: string; stderr: string }) => err);
    expect(`${stdout}${stderr}`.trim()).toBe("");
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test("behavior: the server unit runs `serve` with the settings file and the state directory docs/deploy.md names", () => {
  const unit = readFileSync(join(dir, "agentwallet.service"), "utf8");
  expect(unit).toMatch(/^ExecStart=\/usr\/bin\/node \/opt\/agentwallet\/packages\/server\/bin\/agentwallet\.js serve$/m);
  expect(unit).toMatch(/^EnvironmentFile=\/etc\/agentwallet\/agentwallet\.env$/m);
  expect(unit).toMatch(/^StateDirectory=agentwallet$/m);
  expect(unit).toMatch(/^UMask=0077$/m);
});
