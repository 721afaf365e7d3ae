// The projects' wallets of one master mnemonic (BIP-44, m/44'/60'/0'/0/{index}), for custody.ts and the signing
// threads. Plain JavaScript so it runs the same under node, tsx and the test runner.
//
// viem's mnemonicToAccount computes the BIP-39 seed for every account it makes: PBKDF2-HMAC-SHA512 with 2,048
// rounds in JavaScript (about 140 ms), then the master key and four hardened steps (about 50 ms more), so each
// wallet met for the first time held its thread for some 200 ms. Here the seed is computed once, by the platform's
// PBKDF2 (the same bytes, in a few milliseconds), and the node m/44'/60'/0'/0 once; a wallet is then one
// derivation step from that node.
import { pbkdf2Sync } from "node:crypto";
import { HDKey, hdKeyToAccount } from "viem/accounts";

/** Wallets kept derived: an address book of every project is not needed. */
const CACHED_MAX = 10_000;

/** BIP-39's seed of a phrase without passphrase: PBKDF2-HMAC-SHA512(NFKD(phrase), "mnemonic", 2048 rounds, 64 bytes). */
export function bip39Seed(mnemonic) {
  return new Uint8Array(pbkdf2Sync(Buffer.from(mnemonic.normalize("NFKD"), "utf8"), "mnemonic", 2048, 64, "sha512"));
}

/** The wallet at `index` (an HD account, as mnemonicToAccount(mnemonic, { addressIndex: index }) makes it). */
export function hdWallets(mnemonic) {
  const external = HDKey.fromMasterSeed(bip39Seed(mnemonic)).derive("m/44'/60'/0'/0");
  const cache = new Map();
  return (index) => {
    if (!Number.isSafeInteger(index) || index < 0 || index >= 2 ** 31) throw new Error(`wallet index out of range: ${index}`);
    let a = cache.get(index);
    if (!a) {
      // A path below the node it is derived from (bip32's derive is relative to its key).
      a = hdKeyToAccount(external, { path: `m/${index}` });
      if (cache.size >= CACHED_MAX) cache.delete(cache.keys().next().value);
      cache.set(index, a);
    }
    return a;
  };
}
