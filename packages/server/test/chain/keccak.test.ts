// The relayer's hashing (chain/keccak.ts) and its transaction signer (custody.ts) against viem's: the same digests
// and the same signed bytes, for inputs across keccak's 136-byte block and as large as a full relayer batch.
import { randomBytes } from "node:crypto";
import fc from "fast-check";
import { type Hex, bytesToHex, keccak256, parseTransaction, recoverTransactionAddress } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, test } from "vitest";
import { keccak256Of } from "../../src/chain/keccak.ts";
import { createHdCustody } from "../../src/chain/custody.ts";

const MNEMONIC = "test test test test test test test test test test test junk";

describe("relayer hashing and signing", () => {
  test("property: keccak256Of equals viem's keccak256 for any bytes, up to a full batch's calldata", async () => {
    for (const n of [0, 1, 135, 136, 137, 271, 272, 36_000]) {
      const hex = bytesToHex(randomBytes(n));
      expect(await keccak256Of(hex)).toBe(keccak256(hex));
    }
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2_000 }), async (bytes) => {
        const hex = bytesToHex(bytes);
        expect(await keccak256Of(hex)).toBe(keccak256(hex));
      }),
      { numRuns: 200 },
    );
  });

  test("behavior: the custody's transaction signer makes viem's signed bytes, which recover to the relayer", async () => {
    const key = generatePrivateKey();
    const ours = createHdCustody(MNEMONIC).transactionSigner(key);
    const viems = privateKeyToAccount(key);
    const data = bytesToHex(randomBytes(36_000));
    const tx = { chainId: 8453, type: "eip1559", to: "0xcA11bde05977b3631167028862bE2a173976CA11", data, nonce: 7, gas: 7_700_000n, maxFeePerGas: 2_000_000_000n, maxPriorityFeePerGas: 1_000_000n, value: 0n } as const;
    const raw = await ours.signTransaction(tx);
    // RFC 6979 signatures are deterministic: the same key and transaction give the same bytes.
    expect(raw).toBe(await viems.signTransaction(tx));
    expect(await recoverTransactionAddress({ serializedTransaction: raw as never })).toBe(viems.address);
    expect(parseTransaction(raw)).toMatchObject({ nonce: 7, data });
    expect(ours.address).toBe(viems.address);
  });
});
