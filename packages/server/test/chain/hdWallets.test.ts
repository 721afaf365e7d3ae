import { Worker } from "node:worker_threads";
import { mnemonicToSeedSync } from "@scure/bip39";
import { english, generateMnemonic, mnemonicToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { createHdCustody, isBip39Phrase, loadMasterMnemonic } from "../../src/chain/custody.ts";
import { bip39Seed, hdWallets } from "../../src/chain/hdWallets.mjs";
import { TEST_MNEMONIC, checksumBroken } from "../support/mnemonic.ts";

const INDEXES = [0, 1, 2, 7, 1_000, 2 ** 31 - 1];

describe("project wallets: the seed once, a wallet one step from m/44'/60'/0'/0", () => {
  test.each([
    ["the tests' mnemonic", TEST_MNEMONIC],
    ["a fresh 24-word mnemonic", generateMnemonic(english, 256)],
    ["a fresh 12-word mnemonic", generateMnemonic(english, 128)],
  ])("%s: every wallet's key and address are viem's mnemonicToAccount's", (_, mnemonic) => {
    const wallet = hdWallets(mnemonic);
    for (const index of INDEXES) {
      const expected = mnemonicToAccount(mnemonic, { addressIndex: index });
      const a = wallet(index);
      expect(a.address).toBe(expected.address);
      expect(Buffer.from(a.getHdKey().privateKey!).toString("hex")).toBe(Buffer.from(expected.getHdKey().privateKey!).toString("hex"));
    }
    // The platform's PBKDF2 makes @scure/bip39's seed (the one viem derives from).
    expect(Buffer.from(bip39Seed(mnemonic)).toString("hex")).toBe(Buffer.from(mnemonicToSeedSync(mnemonic)).toString("hex"));
  });

  test("an index outside BIP-32's unhardened range is refused", () => {
    const wallet = hdWallets(TEST_MNEMONIC);
    for (const bad of [-1, 2 ** 31, 1.5, Number.NaN]) expect(() => wallet(bad)).toThrow(/wallet index out of range/);
  });

  test("custody's addresses and the signing thread's signatures come from the same wallets", async () => {
    const custody = createHdCustody(TEST_MNEMONIC);
    const def = {
      domain: { name: "USD Coin", version: "2", chainId: 84532, verifyingContract: "0x036CbD53842c5426634e7929541eC2318f3dCF7e" },
      types: { TransferWithAuthorization: [{ name: "from", type: "address" }, { name: "to", type: "address" }, { name: "value", type: "uint256" }, { name: "validAfter", type: "uint256" }, { name: "validBefore", type: "uint256" }, { name: "nonce", type: "bytes32" }] },
      primaryType: "TransferWithAuthorization",
      message: { from: custody.addressOf(5), to: custody.addressOf(6), value: 1_000n, validAfter: 0n, validBefore: 2n ** 40n, nonce: `0x${"11".repeat(32)}` },
    } as const;
    const onCaller = await custody.signerFor(5).signTypedData(def as never);
    expect(onCaller).toBe(await mnemonicToAccount(TEST_MNEMONIC, { addressIndex: 5 }).signTypedData(def as never));
    const worker = new Worker(new URL("../../src/chain/signingWorker.mjs", import.meta.url), { workerData: { mnemonic: TEST_MNEMONIC } });
    try {
      const answer = await new Promise<{ signature?: string; error?: string }>((resolve, reject) => {
        worker.once("message", resolve);
        worker.once("error", reject);
        worker.postMessage({ id: 1, op: "typedData", index: 5, def });
      });
      expect(answer).toEqual({ id: 1, signature: onCaller });
    } finally {
      await worker.terminate();
    }
  });
});

describe("the master mnemonic's words", () => {
  test("a valid phrase is taken as given, and is BIP-39", () => {
    expect(loadMasterMnemonic({ mnemonic: ` ${TEST_MNEMONIC}\n` })).toBe(TEST_MNEMONIC);
    expect(isBip39Phrase(TEST_MNEMONIC)).toBe(true);
  });

  test("a word outside the English list, or a valid word that breaks the checksum, is not BIP-39 (the start judges it against the ledger)", () => {
    const words = generateMnemonic(english, 256).split(" ");
    expect(isBip39Phrase([...words.slice(0, 23), `${words[23]}x`].join(" "))).toBe(false);
    expect(isBip39Phrase(checksumBroken(words).join(" "))).toBe(false);
    expect(() => loadMasterMnemonic({ mnemonic: words.slice(0, 23).join(" ") })).toThrow(/must have 12-24 words/);
    expect(() => loadMasterMnemonic({ mnemonic: words.join("  ") })).toThrow(/must separate its words by single spaces/);
  });
});
