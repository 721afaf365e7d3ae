// Regenerates src/artifacts/ from contracts/*.sol: one JSON artifact per contract and abi.ts.
// Run after editing a contract (`npm run build:contracts -w @agentwallet/devchain`) and commit the output;
// test/artifacts.test.ts fails while they disagree.
import { mkdirSync, writeFileSync } from "node:fs";
import { compileContracts, renderAbiModule } from "./compile-contracts.ts";

const artifactsDir = new URL("../src/artifacts/", import.meta.url);
mkdirSync(artifactsDir, { recursive: true });

const artifacts = compileContracts();
for (const artifact of artifacts) {
  writeFileSync(new URL(`${artifact.contractName}.json`, artifactsDir), `${JSON.stringify(artifact, null, 2)}\n`);
}
writeFileSync(new URL("abi.ts", artifactsDir), renderAbiModule(artifacts));

for (const a of artifacts) {
  console.log(`${a.contractName}: ${(a.deployedBytecode.length - 2) / 2} bytes deployed, solc ${a.solcVersion}`);
}
