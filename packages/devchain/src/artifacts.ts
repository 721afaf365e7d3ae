// Compiled contracts (see scripts/build-contracts.ts): typed ABIs for viem, bytecode for deployment.
import type { Hex } from "viem";
import multicall3Json from "./artifacts/Multicall3.json" with { type: "json" };
import testUsdcJson from "./artifacts/TestUSDC.json" with { type: "json" };
import { multicall3Abi, testUsdcAbi } from "./artifacts/abi.ts";

export { multicall3Abi, testUsdcAbi };

export type Artifact<TAbi> = {
  contractName: string;
  abi: TAbi;
  bytecode: Hex;
  deployedBytecode: Hex;
  sourceSha256: string;
  solcVersion: string;
};

export const testUsdcArtifact: Artifact<typeof testUsdcAbi> = { ...testUsdcJson, abi: testUsdcAbi } as Artifact<
  typeof testUsdcAbi
>;
export const multicall3Artifact: Artifact<typeof multicall3Abi> = {
  ...multicall3Json,
  abi: multicall3Abi,
} as Artifact<typeof multicall3Abi>;

/** Where Multicall3 lives on every public chain, and where the dev chain puts it. */
export const MULTICALL3_ADDRESS = "0xcA11bde05977b3631167028862bE2a173976CA11" as const;
