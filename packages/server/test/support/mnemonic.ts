/** The tests' master mnemonic, in a module of its own so processes started outside vitest (benches) can import it. */

// Not anvil's mnemonic: project wallets must never coincide with the dev chain's prefunded accounts.
export const TEST_MNEMONIC = "legal winner thank year wave sausage worth useful legal winner thank yellow";
