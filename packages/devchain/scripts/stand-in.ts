// The stand-in for Base and Bridge that docs/deploy.md's rehearsal runs (src/baseStandIn.ts):
//   npm run -s stand-in -w @agentwallet/devchain [-- --bridge-webhook URL]   prints the settings, runs until Ctrl-C
//   npm run -s stand-in -w @agentwallet/devchain -- mint ADDRESS USDC       test USDC to ADDRESS (BASE_RPC_URL set)
import { parseUnits, isAddress } from "viem";
import { BASE_USDC_ADDRESS } from "../src/circleUsdc.ts";
import { STAND_IN_BLOCK_SECONDS, startBaseStandIn } from "../src/baseStandIn.ts";
import { connectDevChain } from "../src/startDevChain.ts";

const usage = "usage: stand-in [--bridge-webhook URL] | stand-in mint ADDRESS USDC (with BASE_RPC_URL set)";
const args = process.argv.slice(2);

if (args[0] === "mint") {
  const [, to, usdc] = args;
  const rpcUrl = process.env.BASE_RPC_URL;
  if (!to || !isAddress(to) || !usdc || !/^\d+(\.\d{1,6})?$/.test(usdc) || !rpcUrl) fail(usage);
  const dev = await connectDevChain({ rpcUrl, usdcAddress: (process.env.USDC_ADDRESS || BASE_USDC_ADDRESS) as `0x${string}` });
  console.log(`minted ${usdc} test USDC to ${to}: ${await dev.mint(to, parseUnits(usdc, 6))}`);
} else {
  const at = args.indexOf("--bridge-webhook");
  if (args.length !== (at === -1 ? 0 : 2) || (at !== -1 && !args[at + 1])) fail(usage);
  const standIn = await startBaseStandIn({ bridgeWebhookUrl: at === -1 ? undefined : args[at + 1] });
  console.log(`# A stand-in for Base (chain 8453, a block every ${STAND_IN_BLOCK_SECONDS} s) and Bridge, for a rehearsal only:`);
  console.log("# the relayer and treasury are anvil's public test accounts. Ctrl-C stops it all.");
  for (const [name, value] of Object.entries(standIn.env)) console.log(`${name}=${value.includes(" ") ? `"${value}"` : value}`);
  console.log(`# x402 merchant, plain http (put TLS in front of it): ${standIn.merchantPaidUrl}`);
  for (const signal of ["SIGINT", "SIGTERM"] as const) {
    process.once(signal, () => void standIn.stop().then(() => process.exit(0)));
  }
}

function fail(message: string): never {
  console.error(message);
  process.exit(2);
}
