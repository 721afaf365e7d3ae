import { readFileSync } from "node:fs";
import { expect, test } from "vitest";
import { compileContracts, renderAbiModule } from "../scripts/compile-contracts.ts";

const artifactsDir = new URL("../src/artifacts/", import.meta.url);
// One solc run serves every test below (it takes a second or two).
const compiled = compileContracts();

test.each(compiled.map((a) => [a.contractName, a] as const))(
  "behavior: committed %s artifact matches its source (run `npm run build:contracts` if not)",
  (name, fresh) => {
    const committed = JSON.parse(readFileSync(new URL(`${name}.json`, artifactsDir), "utf8"));
    expect(committed.sourceSha256).toBe(fresh.sourceSha256);
    expect(committed.solcVersion).toBe(fresh.solcVersion);
    expect(committed.bytecode).toBe(fresh.bytecode);
    expect(committed.deployedBytecode).toBe(fresh.deployedBytecode);
    expect(committed.abi).toEqual(fresh.abi);
  },
);

test("behavior: committed abi.ts matches the compiled ABIs", () => {
  expect(readFileSync(new URL("abi.ts", artifactsDir), "utf8")).toBe(renderAbiModule(compiled));
});

test("behavior: compiled with solc 0.8.30", () => {
  for (const artifact of compiled) expect(artifact.solcVersion).toMatch(/^0\.8\.30\+/);
});
