// Project wallets sign EIP-3009 authorizations with the digest taken by chain/eip3009Digest.mjs (the domain's separator
// kept) instead of viem's hashTypedData: the signatures must be viem's, bit for bit, on the caller's thread and in the
// signing threads, and anything not in exactly the expected shape must get viem's own answer, errors included.
import fc from "fast-check";
import { type Hex, bytesToHex, getAddress, hashTypedData, recoverTypedDataAddress } from "viem";
import { mnemonicToAccount } from "viem/accounts";
import { afterAll, describe, expect, test } from "vitest";
import { createHdCustody } from "../../src/chain/custody.ts";
import { transferWithAuthorizationDigest } from "../../src/chain/eip3009Digest.mjs";
import { createSigningPool } from "../../src/chain/signingPool.ts";
import { transferWithAuthorizationTypes } from "../../src/rails/eip3009.ts";

const MNEMONIC = "test test test test test test test test test test test junk";
const pool = createSigningPool(MNEMONIC, 1);
afterAll(() => pool.close());
const onCaller = createHdCustody(MNEMONIC);
const threaded = createHdCustody(MNEMONIC, { pool });

const accounts = new Map<number, ReturnType<typeof mnemonicToAccount>>();
const accountAt = (index: number) => accounts.get(index) ?? accounts.set(index, mnemonicToAccount(MNEMONIC, { addressIndex: index })).get(index)!;
const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).chain((b) => fc.constantFrom(getAddress(bytesToHex(b)), bytesToHex(b)));
const uint256 = fc.oneof(fc.constantFrom(0n, 1n, 2n ** 256n - 1n), fc.bigInt({ min: 0n, max: 2n ** 256n - 1n }), fc.bigInt({ min: 0n, max: 10n ** 12n }));
const authorization = fc.record({
  index: fc.nat({ max: 40 }),
  domain: fc.record({ name: fc.constantFrom("USD Coin", "USDC", ""), version: fc.constantFrom("2", "1"), chainId: fc.constantFrom(8453, 84532, 31337, 1), verifyingContract: address }),
  message: fc.record({ to: address, value: uint256, validAfter: uint256, validBefore: uint256, nonce: fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => bytesToHex(b)) }),
});

describe("EIP-3009 digests", () => {
  test("property: the custody's signatures equal viem's signTypedData, on the caller's thread and in the signing threads", async () => {
    await fc.assert(
      fc.asyncProperty(authorization, async ({ index, domain, message }) => {
        const viems = accountAt(index);
        const def = { domain, types: transferWithAuthorizationTypes, primaryType: "TransferWithAuthorization", message: { from: viems.address, ...message } } as const;
        expect(bytesToHex(transferWithAuthorizationDigest(def)!)).toBe(hashTypedData(def));
        const expected = await viems.signTypedData(def);
        expect(await onCaller.signerFor(index).signTypedData(def)).toBe(expected);
        expect(await threaded.signerFor(index).signTypedData(def)).toBe(expected);
        expect(await recoverTypedDataAddress({ ...def, signature: expected })).toBe(viems.address);
      }),
      { numRuns: 150 },
    );
  });

  const viems = mnemonicToAccount(MNEMONIC, { addressIndex: 1 });
  const base = {
    domain: { name: "USD Coin", version: "2", chainId: 8453, verifyingContract: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" },
    types: transferWithAuthorizationTypes,
    primaryType: "TransferWithAuthorization",
    message: { from: viems.address, to: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", value: 10_000n, validAfter: 0n, validBefore: 1_800_000_000n, nonce: `0x${"ab".repeat(32)}` },
  } as const;
  test("behavior: each domain gets its own separator, however its strings would run together", async () => {
    for (const [name, version] of [["USD Coin\u00002", "1"], ["USD Coin", "2\u00001"], ["USD Coin", "2"], ['["USD Coin"', '"2"]']]) {
      const def = { ...base, domain: { ...base.domain, name, version } };
      expect(bytesToHex(transferWithAuthorizationDigest(def)!)).toBe(hashTypedData(def));
      expect(await onCaller.signerFor(1).signTypedData(def)).toBe(await viems.signTypedData(def));
    }
  });

  const shapes: [string, (d: typeof base) => unknown][] = [
    ["a mixed-case payee that fails its checksum", (d) => ({ ...d, message: { ...d.message, to: "0x209693bc6afc0C5328bA36FaF03C514EF312287C" } })],
    ["a value past uint256", (d) => ({ ...d, message: { ...d.message, value: 2n ** 256n } })],
    ["a negative validAfter", (d) => ({ ...d, message: { ...d.message, validAfter: -1n } })],
    ["a value given as a number", (d) => ({ ...d, message: { ...d.message, value: 10_000 } })],
    ["a 31-byte nonce", (d) => ({ ...d, message: { ...d.message, nonce: `0x${"ab".repeat(31)}` } })],
    ["a domain with a salt", (d) => ({ ...d, domain: { ...d.domain, salt: `0x${"00".repeat(32)}` } })],
    ["a domain without a version", (d) => ({ ...d, domain: { name: "USD Coin", chainId: 8453, verifyingContract: d.domain.verifyingContract } })],
    ["a chain id as a bigint", (d) => ({ ...d, domain: { ...d.domain, chainId: 8453n } })],
    ["fields in another order", (d) => ({ ...d, types: { TransferWithAuthorization: [d.types.TransferWithAuthorization[1], d.types.TransferWithAuthorization[0], ...d.types.TransferWithAuthorization.slice(2)] } })],
    ["another primary type", (d) => ({ ...d, primaryType: "ReceiveWithAuthorization", types: { ReceiveWithAuthorization: d.types.TransferWithAuthorization } })],
    ["an extra type", (d) => ({ ...d, types: { ...d.types, Extra: [{ name: "x", type: "uint256" }] } })],
  ];
  test.each(shapes)("behavior: %s is left to viem, whose answer the custody gives", async (_name, change) => {
    const def = change(base) as never;
    expect(transferWithAuthorizationDigest(def)).toBeUndefined();
    const expected = await viems.signTypedData(def).then(
      (s: Hex) => ({ ok: s }),
      (e: Error) => ({ error: e.name }),
    );
    const ours = await onCaller.signerFor(1).signTypedData(def).then(
      (s) => ({ ok: s }),
      (e: Error) => ({ error: e.name }),
    );
    expect(ours).toEqual(expected);
  });
});
