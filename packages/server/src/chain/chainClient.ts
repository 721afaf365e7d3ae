/**
 * ChainClient port over viem: the reads and writes the service makes on Base. Every RPC call has an
 * explicit deadline and a bounded number of retries (STYLE: options that touch money are explicit).
 */
import {
  type Address,
  type Hex,
  type PublicClient,
  createPublicClient,
  defineChain,
  encodeFunctionData,
  http,
  parseAbi,
  parseAbiItem,
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  ExecutionRevertedError,
  RawContractError,
  decodeErrorResult,
  getAddress,
  pad,
  toEventSelector,
  toHex,
} from "viem";

export const usdcAbi = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function transfer(address to, uint256 value) returns (bool)",
  "function authorizationState(address authorizer, bytes32 nonce) view returns (bool)",
  "function transferWithAuthorization(address from, address to, uint256 value, uint256 validAfter, uint256 validBefore, bytes32 nonce, bytes signature)",
  "function name() view returns (string)",
  "function version() view returns (string)",
  "event Transfer(address indexed from, address indexed to, uint256 value)",
  // Circle's FiatToken: its blacklister freezes an address (every transfer from or to it reverts).
  // (Its `Blacklisted(address)` / `UnBlacklisted(address)` events: BLACKLIST_TOPICS.)
  "function isBlacklisted(address account) view returns (bool)",
]);
export const transferEvent = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
const BLACKLIST_TOPICS = [toEventSelector("Blacklisted(address)"), toEventSelector("UnBlacklisted(address)")];
export const multicall3Abi = parseAbi([
  "struct Call3 { address target; bool allowFailure; bytes callData; }",
  "struct Result { bool success; bytes returnData; }",
  "function aggregate3(Call3[] calls) payable returns (Result[] returnData)",
]);
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** How old an answer shared between concurrent callers may be. */
const SHARED_READ_MS = 200;
const SHARED_READ_KEYS_MAX = 4_096;

/**
 * Wraps a read so callers asking for the same key within `maxAgeMs` share one request (also while it
 * is in flight). Failures are not kept. Bounded: the oldest keys go first.
 */
function shared<K, V>(read: (key: K) => Promise<V>, maxAgeMs: number): (key: K) => Promise<V> {
  const entries = new Map<K, { at: number; value: Promise<V> }>();
  return (key) => {
    const now = Date.now();
    const e = entries.get(key);
    if (e && now - e.at <= maxAgeMs) return e.value;
    const value = read(key);
    entries.delete(key);
    entries.set(key, { at: now, value });
    value.catch(() => entries.get(key)?.value === value && entries.delete(key));
    if (entries.size > SHARED_READ_KEYS_MAX) entries.delete(entries.keys().next().value as K);
    return value;
  };
}

/** The text of a revert: the decoded `Error(string)` of its data, else what the node said. */
function decodeRevertReason(err: BaseError & { details?: string; data?: Hex | { data?: Hex } }): string {
  const data = typeof err.data === "string" ? err.data : err.data?.data;
  if (data && data.length > 10) {
    try {
      const decoded = decodeErrorResult({ data });
      if (decoded.errorName === "Error" && typeof decoded.args?.[0] === "string") return decoded.args[0];
    } catch {
      // Not an Error(string): fall through to the node's words.
    }
  }
  const said = err.details ?? err.shortMessage;
  return said.replace(/^execution reverted:?\s*/i, "").trim() || "execution reverted";
}

export type ChainSettings = { rpcUrl: string; chainId: number; usdcAddress: Address; timeoutMs: number; retries: number; pollingIntervalMs?: number };

export type ChainClient = ReturnType<typeof createChainClient>;

export function createChainClient(s: ChainSettings) {
  const chain = defineChain({
    id: s.chainId,
    name: s.chainId === 8453 ? "Base" : `chain-${s.chainId}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [s.rpcUrl] } },
  });
  const client: PublicClient = createPublicClient({
    chain,
    transport: http(s.rpcUrl, { timeout: s.timeoutMs, retryCount: s.retries, retryDelay: 150 }),
    pollingInterval: s.pollingIntervalMs ?? 1_000,
  }) as PublicClient;

  const receipt = async (hash: Hex) => {
    try {
      return await client.getTransactionReceipt({ hash });
    } catch (err) {
      if ((err as Error).name === "TransactionReceiptNotFoundError") return undefined;
      throw err;
    }
  };
  const blockNumber = async () => Number(await client.getBlockNumber({ cacheTime: 0 }));
  // Many payments share one relayer transaction and poll at once: one request answers them all.
  const receipts = shared(receipt, SHARED_READ_MS);

  /** The head as last read (`at`: when that read started), and the read under way, if any. */
  let head: { number: number; at: number } | undefined;
  let reading: Promise<number> | undefined;
  function readHead(): Promise<number> {
    if (!reading) {
      const at = Date.now();
      reading = blockNumber()
        .then((n) => {
          if (!head || n >= head.number) head = { number: n, at };
          return n;
        })
        .finally(() => (reading = undefined));
    }
    return reading;
  }
  /**
   * The head block as read at most `maxAgeMs` ago, one read at a time for all callers. With
   * `refreshAfterMs`, an answer older than that is still given at once while a new read starts in the
   * background (a failed background read is simply tried again by the next caller).
   */
  function recentBlockNumber(maxAgeMs: number, refreshAfterMs = maxAgeMs): Promise<number> {
    const age = head ? Date.now() - head.at : Number.POSITIVE_INFINITY;
    if (age > maxAgeMs) return readHead();
    if (age > refreshAfterMs) readHead().catch(() => undefined);
    return Promise.resolve(head!.number);
  }

  return {
    settings: s,
    chain,
    client,
    usdcAddress: s.usdcAddress,
    blockNumber,
    recentBlockNumber,
    /** The hash of block `n` as the chain has it now; undefined when it has no such block (yet, or any more). */
    blockHash: async (n: number): Promise<Hex | undefined> => {
      try {
        return (await client.getBlock({ blockNumber: BigInt(n) })).hash ?? undefined;
      } catch (err) {
        if ((err as Error).name === "BlockNotFoundError") return undefined;
        throw err;
      }
    },
    /** USDC Transfer logs to any of `to` in [fromBlock, toBlock]; the caller bounds the range. */
    transfersTo: (to: Address[], fromBlock: number, toBlock: number) =>
      client.getLogs({ address: s.usdcAddress, event: transferEvent, args: { to }, fromBlock: BigInt(fromBlock), toBlock: BigInt(toBlock), strict: true }),
    receipt,
    /** A receipt as read at most SHARED_READ_MS ago, one request for all callers asking at once. */
    sharedReceipt: (hash: Hex) => receipts(hash),
    transactionKnown: async (hash: Hex) => {
      try {
        await client.getTransaction({ hash });
        return true;
      } catch (err) {
        if ((err as Error).name === "TransactionNotFoundError") return false;
        throw err;
      }
    },
    usdcBalance: (address: Address) => client.readContract({ address: s.usdcAddress, abi: usdcAbi, functionName: "balanceOf", args: [address] }),
    /** Whether the authorization was used, at the latest block or at `blockNumber`. */
    authorizationUsed: (authorizer: Address, nonce: Hex, blockNumber?: number) =>
      client.readContract({ address: s.usdcAddress, abi: usdcAbi, functionName: "authorizationState", args: [authorizer, nonce], ...(blockNumber === undefined ? {} : { blockNumber: BigInt(blockNumber) }) }),
    /**
     * Whether USDC's blacklister froze `account`; undefined when the token has no blacklist (the test
     * token) or the answer is not a boolean.
     */
    isBlacklisted: async (account: Address): Promise<boolean | undefined> => {
      try {
        return await client.readContract({ address: s.usdcAddress, abi: usdcAbi, functionName: "isBlacklisted", args: [account] });
      } catch (err) {
        if (err instanceof BaseError && err.walk((e) => e instanceof ContractFunctionRevertedError || e instanceof ContractFunctionZeroDataError)) return undefined;
        throw err;
      }
    },
    /** The accounts of any of `accounts` that USDC blacklisted or unblacklisted in [fromBlock, toBlock]; the caller bounds the range. */
    blacklistChanges: async (accounts: Address[], fromBlock: number, toBlock: number): Promise<Address[]> => {
      // One request for both events: topic 0 either signature, topic 1 any of the accounts.
      const logs = await client.request({
        method: "eth_getLogs",
        params: [{ address: s.usdcAddress, fromBlock: toHex(fromBlock), toBlock: toHex(toBlock), topics: [BLACKLIST_TOPICS, accounts.map((a) => pad(a.toLowerCase() as Hex))] }],
      });
      return [...new Set(logs.map((l) => getAddress(`0x${(l.topics[1] ?? "").slice(26)}`)))];
    },
    /**
     * Why this transferWithAuthorization reverts (its revert reason, e.g. "Blacklistable: account is
     * blacklisted"), run at the end of `blockNumber` (or the latest block); undefined if it would succeed.
     * A node that no longer keeps that block's state answers at the latest block instead.
     */
    revertReason: async (data: Hex, blockNumber?: number): Promise<string | undefined> => {
      const run = async (at?: bigint) => {
        try {
          await client.call({ to: s.usdcAddress, data, ...(at === undefined ? {} : { blockNumber: at }) });
          return undefined;
        } catch (err) {
          const reverted = err instanceof BaseError ? (err.walk((e) => e instanceof ExecutionRevertedError || e instanceof RawContractError) as (BaseError & { details?: string; data?: Hex }) | null) : null;
          if (!reverted) throw err;
          return decodeRevertReason(reverted);
        }
      };
      if (blockNumber === undefined) return run();
      try {
        return await run(BigInt(blockNumber));
      } catch {
        return run();
      }
    },
    nonceOf: (address: Address, blockTag: "latest" | "pending") => client.getTransactionCount({ address, blockTag }),
    fees: () => client.estimateFeesPerGas(),
    sendRaw: (raw: Hex) => client.sendRawTransaction({ serializedTransaction: raw }),
    encodeTransferWithAuthorization: (a: { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex; signature: Hex }) =>
      encodeFunctionData({ abi: usdcAbi, functionName: "transferWithAuthorization", args: [a.from, a.to, a.value, a.validAfter, a.validBefore, a.nonce, a.signature] }),
  };
}
