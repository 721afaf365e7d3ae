import { expect, test } from "vitest";
import { mnemonicToAccount } from "viem/accounts";
import { ANVIL_MNEMONIC, DEV_ACCOUNT_INDEXES, devAccounts } from "../src/accounts.ts";

test("each named account is the one viem derives from anvil's mnemonic at its index, key and address", () => {
  const accounts = devAccounts();
  for (const [role, index] of Object.entries(DEV_ACCOUNT_INDEXES)) {
    const viem = mnemonicToAccount(ANVIL_MNEMONIC, { addressIndex: index });
    const key = viem.getHdKey().privateKey!;
    expect(accounts[role as keyof typeof accounts], role).toEqual({ address: viem.address, privateKey: `0x${Buffer.from(key).toString("hex")}` });
  }
  // Anvil's first prefunded account, as anvil prints it at start.
  expect(accounts.deployer.address).toBe("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266");
  expect(devAccounts()).toBe(accounts);
});
