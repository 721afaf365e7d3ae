/**
 * keccak-256 of a relayer transaction. A transaction carries about 1.1 KB of calldata a payment (up to 36 KB for a
 * full batch) and is hashed twice: once to be signed, once for its hash. viem's keccak is JavaScript: 2.5 ms for
 * 36 KB, which made hashing the largest single cost of the settlement thread in the pay benchmark's CPU profile;
 * hash-wasm's WebAssembly one takes 0.12 ms (decisions.md, "Hashing relayer transactions"). Same function, same
 * digest: only where it runs differs.
 */
import { createKeccak } from "hash-wasm";
import type { Hex } from "viem";

let hasher: ReturnType<typeof createKeccak> | undefined;

/** keccak-256 of the bytes `hex` spells (0x-prefixed). */
export async function keccak256Of(hex: Hex): Promise<Hex> {
  // One instance per thread, reused: the calls in it never interleave (init, update and digest are synchronous).
  const k = await (hasher ??= createKeccak(256).catch((err: unknown) => {
    hasher = undefined; // tried again by the next call
    throw err;
  }));
  k.init();
  k.update(Buffer.from(hex.slice(2), "hex"));
  return `0x${k.digest("hex")}`;
}
