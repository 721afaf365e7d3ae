/**
 * Deposit watcher: reads USDC Transfer logs to known project wallets in bounded block ranges from a
 * persisted cursor. A transfer with fewer than `confirmations` blocks shows in `pending`; once deep
 * enough, and still present on-chain, it is credited as `usdc_fund`. Credits are unique per
 * (chain, tx_hash, log_index) in the ledger, so overlapping scans, restarts and webhook hints can
 * never credit twice. The cursor stays `confirmations` blocks behind the head, so the unconfirmed
 * tail is rescanned each tick and a reorg that moves a transfer is seen again.
 *
 * The same ranges are read for USDC's `Blacklisted` / `UnBlacklisted` events naming a project wallet:
 * each names a wallet whose freeze may have changed, and `isBlacklisted` says what it is now (so events
 * seen twice or out of order change nothing), stored by walletFreeze.ts.
 */
import { type Address, type Hex, getAddress } from "viem";
import type { Logger } from "pino";
import type { ChainClient } from "../chain/chainClient.ts";
import type { DepositStore, KvStore, ProjectStore, ReturnWatchStore } from "../ledger/ports.ts";
import { type Clock, systemClock } from "../ids.ts";
import { recordWalletFreeze } from "../rails/walletFreeze.ts";

export type WatcherOptions = {
  chainName: string;
  confirmations: number;
  /** Blocks per eth_getLogs call (providers cap ranges). */
  maxBlocksPerScan: number;
  /** Addresses per eth_getLogs topic filter. */
  maxAddressesPerQuery?: number;
  /** Where a deployment without a cursor starts scanning. */
  startBlock: (head: number) => number;
  /** Transfers from these addresses are refunds already credited by the ledger (e.g. the off-ramp). */
  ignoreFrom?: Address[];
  /** Refunds whose senders are known only at run time (a Bridge transfer's deposit address). */
  isRefundFrom?: (from: Address) => Promise<boolean>;
  onCredit?: (amountMicros: number) => void;
  /** When a freeze is recorded (walletFreeze.ts). */
  clock?: Clock;
};

export type TickResult = { head: number; scannedFrom: number; scannedTo: number; seen: number; credited: number; dropped: number };

export type DepositWatcher = ReturnType<typeof createDepositWatcher>;

/** The `kv` key of the last block scanned on this chain (read by the lag metric, server.ts). */
export const depositCursorKey = (chainName: string) => `deposits:cursor:${chainName}`;
/** The `kv` key of that block's hash, as the chain had it when the scan passed it. */
const depositCursorHashKey = (chainName: string) => `deposits:cursor-hash:${chainName}`;

/**
 * How far back the scan starts again when the chain no longer has the block it had reached: a reorganization
 * deeper than the confirmations (the cursor stays that far behind the head, so no shallower one reaches it).
 * Rescanning credits nothing twice; on Base this is over half an hour of blocks.
 */
export const REORG_RESCAN_BLOCKS = 1_000;

export function createDepositWatcher(
  ledger: { deposits: DepositStore; kv: KvStore; returnWatch: Pick<ReturnWatchStore, "recordRefund"> } & { projects: Pick<ProjectStore, "withWallets" | "setWalletFrozen"> },
  chain: ChainClient,
  logger: Logger,
  o: WatcherOptions,
) {
  const cursorKey = depositCursorKey(o.chainName);
  const cursorHashKey = depositCursorHashKey(o.chainName);
  const perQuery = o.maxAddressesPerQuery ?? 500;
  const ignore = new Set((o.ignoreFrom ?? []).map((a) => a.toLowerCase()));
  const depth = (head: number, block: number) => head - block + 1;

  async function wallets(): Promise<Map<string, string>> {
    const rows = await ledger.projects.withWallets();
    return new Map(rows.map((r) => [r.wallet_address.toLowerCase(), r.id]));
  }

  type Log = { transactionHash: Hex; logIndex: number; blockNumber: bigint; blockHash: Hex; args: { from: Address; to: Address; value: bigint } };

  async function record(log: Log, byAddress: Map<string, string>): Promise<boolean> {
    const projectId = byAddress.get(log.args.to.toLowerCase());
    // A transfer from a wallet to itself moves nothing: it is no deposit (it would inflate total_funded).
    const from = log.args.from.toLowerCase();
    if (!projectId || log.args.value === 0n || from === log.args.to.toLowerCase()) return false;
    if (log.args.value > BigInt(Number.MAX_SAFE_INTEGER)) {
      logger.error({ tx: log.transactionHash }, "deposit amount beyond safe integer range; not credited");
      return false;
    }
    // An off-ramp's refund is never a deposit: the payment it belongs to is credited back (failed or
    // reversed) when the provider says so. It is kept, so `reconcile` names one that no payment accounts for.
    if (ignore.has(from) || (o.isRefundFrom && (await o.isRefundFrom(log.args.from)))) {
      await ledger.returnWatch.recordRefund({ chain: o.chainName, txHash: log.transactionHash, logIndex: log.logIndex, projectId, fromAddress: getAddress(log.args.from), amountMicros: Number(log.args.value), blockNumber: Number(log.blockNumber) });
      return false;
    }
    return ledger.deposits.recordSeen({
      chain: o.chainName,
      txHash: log.transactionHash,
      logIndex: log.logIndex,
      projectId,
      toAddress: getAddress(log.args.to),
      fromAddress: getAddress(log.args.from),
      amountMicros: Number(log.args.value),
      blockNumber: Number(log.blockNumber),
      blockHash: log.blockHash,
    });
  }

  /** Credits seen deposits that are deep enough and still on-chain; drops the ones that vanished. */
  async function confirmPass(head: number): Promise<{ credited: number; dropped: number }> {
    let credited = 0;
    let dropped = 0;
    for (const d of await ledger.deposits.seen(o.chainName, 500)) {
      if (depth(head, d.block_number) < o.confirmations) continue;
      const receipt = await chain.receipt(d.tx_hash as Hex);
      const key = { chain: o.chainName, txHash: d.tx_hash, logIndex: d.log_index };
      const log = receipt?.status === "success" ? receipt.logs.find((l) => l.logIndex === d.log_index) : undefined;
      const matches =
        log !== undefined &&
        log.address.toLowerCase() === chain.usdcAddress.toLowerCase() &&
        BigInt(log.data) === BigInt(d.amount_micros) &&
        `0x${(log.topics[2] ?? "").slice(26)}`.toLowerCase() === d.to_address.toLowerCase();
      if (!receipt || !matches) {
        if (await ledger.deposits.drop(key)) {
          dropped++;
          logger.warn({ tx: d.tx_hash, log_index: d.log_index }, "deposit no longer on-chain (reorg); not credited");
        }
        continue;
      }
      if (depth(head, Number(receipt.blockNumber)) < o.confirmations) continue; // moved to a later block: wait
      if (await ledger.deposits.credit(key)) {
        credited++;
        o.onCredit?.(d.amount_micros);
        logger.info({ tx: d.tx_hash, log_index: d.log_index, project_id: d.project_id, amount_micros: d.amount_micros }, "deposit credited");
      }
    }
    return { credited, dropped };
  }

  /** A blacklist event named this wallet: store whether USDC's blacklister has it frozen now. */
  async function followFreeze(wallet: Address, byAddress: Map<string, string>): Promise<void> {
    const projectId = byAddress.get(wallet.toLowerCase());
    const frozen = projectId ? await chain.isBlacklisted(wallet) : undefined;
    if (projectId && frozen !== undefined) await recordWalletFreeze({ ledger, clock: o.clock ?? systemClock, logger }, { id: projectId, wallet_address: getAddress(wallet) }, frozen, "USDC blacklist event");
  }

  /**
   * The cursor, or, when the chain no longer has the block it names (below the head with another hash, or
   * above the head), REORG_RESCAN_BLOCKS below where the chain and the cursor still meet: the transfers of
   * the new branch at heights the scan had passed are read again.
   */
  async function cursorOf(head: number): Promise<number> {
    const saved = await ledger.kv.get(cursorKey);
    if (saved === undefined) return o.startBlock(head) - 1;
    const cursor = Number(saved);
    if (cursor < 0) return cursor;
    const known = await ledger.kv.get(cursorHashKey);
    const now = cursor <= head ? await chain.blockHash(cursor) : undefined;
    if (now !== undefined && (known === undefined || known === now)) return cursor;
    const back = Math.max(-1, Math.min(cursor, head) - REORG_RESCAN_BLOCKS);
    logger.warn({ cursor, head, rescan_from: back + 1 }, "the chain no longer has the block the deposit scan had reached (a reorganization deeper than the confirmations): scanning again from an earlier block");
    // The rewound cursor keeps its own block's hash, so the next tick does not find the old one and go back again.
    const backHash = back >= 0 ? await chain.blockHash(back) : undefined;
    if (backHash) await ledger.kv.set(cursorHashKey, backHash);
    else await ledger.kv.delete(cursorHashKey);
    await ledger.kv.set(cursorKey, String(back));
    return back;
  }

  async function tick(): Promise<TickResult> {
    const head = await chain.blockNumber();
    const cursor = await cursorOf(head);
    const from = Math.max(0, cursor + 1);
    const to = Math.min(head, from + o.maxBlocksPerScan - 1);
    let seen = 0;
    if (from <= to) {
      const byAddress = await wallets();
      const addresses = [...byAddress.keys()] as Address[];
      for (let i = 0; i < addresses.length; i += perQuery) {
        const some = addresses.slice(i, i + perQuery);
        const logs = await chain.transfersTo(some, from, to);
        for (const log of logs) if (await record(log as Log, byAddress)) seen++;
        for (const wallet of await chain.blacklistChanges(some, from, to)) await followFreeze(wallet, byAddress);
      }
      // Keep the unconfirmed tail in the next scan; never move backwards.
      const next = Math.max(cursor, Math.min(to, head - o.confirmations));
      if (next !== cursor) {
        // The block's hash first: a cursor without its own hash beside it is checked against an older one,
        // and a mismatch only scans again.
        const hash = next >= 0 ? await chain.blockHash(next) : undefined;
        if (hash) await ledger.kv.set(cursorHashKey, hash);
        await ledger.kv.set(cursorKey, String(next));
      }
    }
    const { credited, dropped } = await confirmPass(head);
    return { head, scannedFrom: from, scannedTo: to, seen, credited, dropped };
  }

  /** A hint (provider webhook): look at this transaction on-chain now. Credits only what the chain shows. */
  async function checkTransaction(hash: Hex): Promise<{ found: boolean; seen: number; credited: number }> {
    const receipt = await chain.receipt(hash);
    if (!receipt || receipt.status !== "success") return { found: false, seen: 0, credited: 0 };
    const byAddress = await wallets();
    let seen = 0;
    for (const l of receipt.logs) {
      if (l.address.toLowerCase() !== chain.usdcAddress.toLowerCase() || l.topics.length !== 3) continue;
      if (l.topics[0] !== "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef") continue;
      const log: Log = {
        transactionHash: receipt.transactionHash,
        logIndex: l.logIndex,
        blockNumber: receipt.blockNumber,
        blockHash: receipt.blockHash,
        args: { from: `0x${l.topics[1]!.slice(26)}` as Address, to: `0x${l.topics[2]!.slice(26)}` as Address, value: BigInt(l.data) },
      };
      if (await record(log, byAddress)) seen++;
    }
    const { credited } = await confirmPass(await chain.blockNumber());
    return { found: true, seen, credited };
  }

  return { tick, checkTransaction, confirmPass };
}
