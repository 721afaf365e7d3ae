// viem clients for the dev chain. Anvil answers in milliseconds, so they poll every 50 ms instead of
// viem's default 4 s, and every receipt wait is bounded.
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
  type Account,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { createNonceManager, jsonRpc } from "viem/nonce";

export const POLLING_INTERVAL_MS = 50;
/** Upper bound on waiting for a receipt; automine answers at once, a block time needs at most a block. */
export const RECEIPT_TIMEOUT_MS = 30_000;
const RPC_TIMEOUT_MS = 10_000;

export function devChainDefinition(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: `devchain-${chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

export function devPublicClient(chain: Chain): PublicClient<Transport, Chain> {
  return createPublicClient({
    chain,
    transport: http(chain.rpcUrls.default.http[0], { timeout: RPC_TIMEOUT_MS, retryCount: 0 }),
    pollingInterval: POLLING_INTERVAL_MS,
  });
}

/**
 * A wallet client sending from `privateKey`, with a nonce manager so concurrent sends do not collide.
 * The manager is private to this client on purpose: viem's shared `nonceManager` remembers the last
 * nonce per address and chain id for the life of the process, so on a second fresh anvil with the same
 * chain id it would hand out nonces from the first, and those transactions would never be mined.
 */
export function devWalletClient(chain: Chain, privateKey: Hex): WalletClient<Transport, Chain, Account> {
  return createWalletClient({
    chain,
    account: privateKeyToAccount(privateKey, { nonceManager: createNonceManager({ source: jsonRpc() }) }),
    transport: http(chain.rpcUrls.default.http[0], { timeout: RPC_TIMEOUT_MS, retryCount: 0 }),
    pollingInterval: POLLING_INTERVAL_MS,
  });
}
