/** The tests' master mnemonic, in a module of its own so processes started outside vitest (benches) can import it. */
import { validateMnemonic } from "@scure/bip39";
import { english } from "viem/accounts";

// Not anvil's mnemonic: project wallets must never coincide with the dev chain's prefunded accounts.
export const TEST_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";

/** The words with one replaced by another word of BIP-39's list so that the checksum no longer matches. */
export function checksumBroken(words: string[]): string[] {
  const out = [...words];
  for (const candidate of english) {
    out[3] = candidate;
    if (candidate !== words[3] && !validateMnemonic(out.join(" "), english)) return out;
  }
  throw new Error("no word breaks the checksum");
}
