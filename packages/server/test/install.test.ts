/**
 * `npm install` on the oldest Node the project supports prints no warning a newcomer would take for breakage.
 * npm warns for two things this test repeats from package-lock.json, without installing: a package whose
 * `engines.node` does not accept that Node (EBADENGINE), and a package with an install script that `allowScripts`
 * neither allows nor denies.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { expect, test } from "vitest";

const root = resolve(import.meta.dirname, "../../..");
const semver = createRequire(import.meta.url)("semver") as { satisfies(v: string, range: string): boolean; minVersion(range: string): { version: string } };
const manifest = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8")) as { engines: { node: string }; allowScripts: Record<string, boolean> };
type LockEntry = { version?: string; engines?: { node?: string }; hasInstallScript?: boolean; optional?: boolean; os?: string[]; cpu?: string[] };
const lock = JSON.parse(readFileSync(resolve(root, "package-lock.json"), "utf8")) as { packages: Record<string, LockEntry> };
const installed = Object.entries(lock.packages).filter(([path]) => path.includes("node_modules/"));
const nameOf = (path: string) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);
/** Platform packages for other systems are skipped by npm, engines and all. */
const installedHere = ([, e]: [string, LockEntry]) =>
  !(e.optional && ((e.os && !e.os.includes(process.platform)) || (e.cpu && !e.cpu.includes(process.arch))));

test("every installed package's engines accept the oldest supported Node and this one", () => {
  const oldest = semver.minVersion(manifest.engines.node).version;
  const refused = installed
    .filter(installedHere)
    .filter(([, e]) => e.engines?.node && [oldest, process.versions.node].some((v) => !semver.satisfies(v, e.engines!.node!)))
    .map(([path, e]) => `${nameOf(path)}@${e.version} wants node ${e.engines!.node}`);
  expect(refused).toEqual([]);
});

test("every package with an install script is allowed or denied in allowScripts", () => {
  const unreviewed = installed
    .filter(installedHere)
    .filter(([path, e]) => e.hasInstallScript && !(nameOf(path) in manifest.allowScripts))
    .map(([path, e]) => `${nameOf(path)}@${e.version}`);
  expect(unreviewed).toEqual([]);
});
