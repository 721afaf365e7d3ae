import { afterAll, beforeAll, expect, test } from "vitest";
import { parseAbi } from "viem";
import { BASE_USDC_ADDRESS, startDevChain, type DevChain } from "../src/index.ts";
import { devChainDefinition, devPublicClient, devWalletClient } from "../src/chain.ts";

let dev: DevChain;
beforeAll(async () => {
  dev = await startDevChain({ usdc: "circle" });
}, 60_000);
afterAll(async () => {
  await dev?.stop();
});

const erc20 = parseAbi(["function transfer(address to, uint256 value) returns (bool)", "function balanceOf(address) view returns (uint256)", "function name() view returns (string)", "function DOMAIN_SEPARATOR() view returns (bytes32)"]);

test("default: Circle's USDC sits at Base's address with Base's domain separator, and mints", async () => {
  const client = devPublicClient(devChainDefinition(dev.chainId, dev.rpcUrl));
  expect(dev.usdcAddress).toBe(BASE_USDC_ADDRESS);
  expect(await client.readContract({ address: dev.usdcAddress, abi: erc20, functionName: "DOMAIN_SEPARATOR" })).toBe("0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f");
  await dev.mint(dev.accounts.payer.address, 5_000_000n);
  expect(await client.readContract({ address: dev.usdcAddress, abi: erc20, functionName: "balanceOf", args: [dev.accounts.payer.address] })).toBe(5_000_000n);
});

test("behavior: a blacklisted sender and a paused token revert with Circle's reasons", async () => {
  const chain = devChainDefinition(dev.chainId, dev.rpcUrl);
  const client = devPublicClient(chain);
  const payer = devWalletClient(chain, dev.accounts.payer.privateKey);
  await dev.mint(dev.accounts.payer.address, 1_000_000n);
  const send = () => client.simulateContract({ account: payer.account, address: dev.usdcAddress, abi: erc20, functionName: "transfer", args: [dev.accounts.other.address, 1n] });
  await dev.circle!.blacklist(dev.accounts.payer.address);
  expect(await dev.circle!.isBlacklisted(dev.accounts.payer.address)).toBe(true);
  await expect(send()).rejects.toThrow(/Blacklistable: account is blacklisted/);
  await dev.circle!.unBlacklist(dev.accounts.payer.address);
  await dev.circle!.pause();
  await expect(send()).rejects.toThrow(/Pausable: paused/);
  await dev.circle!.unpause();
  await expect(send()).resolves.toBeDefined();
});
