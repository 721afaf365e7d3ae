// @agentwallet/devchain: a local chain for the sandbox and tests (anvil from npm, TestUSDC with EIP-3009,
// Multicall3), plus an x402 facilitator and x402 merchants built with Coinbase's own packages.
// Loaded only in sandbox mode and tests, never on the production path.
export { startDevChain, connectDevChain, DevChainError, type DevChain, type StartDevChainOptions } from "./startDevChain.ts";
export {
  startAnvil,
  anvilBinaryPath,
  AnvilStartError,
  ANVIL_READY_TIMEOUT_MS,
  ANVIL_STOP_GRACE_MS,
  type Anvil,
  type StartAnvilOptions,
} from "./anvil.ts";
export {
  ANVIL_MNEMONIC,
  DEV_ACCOUNT_INDEXES,
  devAccounts,
  type DevAccount,
  type DevAccountRole,
  type DevAccounts,
} from "./accounts.ts";
export {
  MULTICALL3_ADDRESS,
  multicall3Abi,
  multicall3Artifact,
  testUsdcAbi,
  testUsdcArtifact,
  type Artifact,
} from "./artifacts.ts";
export { BASE_USDC_ADDRESS, deployCircleUsdc, fiatTokenAbi, type CircleUsdc } from "./circleUsdc.ts";
export { usdcBalanceOf } from "./usdcBalanceOf.ts";
export { startFacilitator, type Facilitator, type StartFacilitatorOptions } from "./facilitator.ts";
export {
  startMerchantV1,
  startMerchantV2,
  USDC_EIP712_DOMAIN,
  type Merchant,
  type RepricingMerchant,
  type StartMerchantOptions,
} from "./merchants.ts";
export {
  startBridgeStandIn,
  BRIDGE_RETURN_ACCOUNT,
  BRIDGE_ERROR_ACCOUNT,
  type BridgeStandIn,
  type BridgeStandInOptions,
} from "./bridgeStandIn.ts";
export { startMppMerchant, type MppMerchant, type StartMppMerchantOptions } from "./mppMerchant.ts";
