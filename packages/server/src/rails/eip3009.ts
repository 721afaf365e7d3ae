/**
 * EIP-3009 `TransferWithAuthorization`: what a project wallet signs so USDC leaves it without the
 * wallet holding gas. The domain is USDC's ("USD Coin", version "2") on the configured chain.
 */
import { randomBytes } from "node:crypto";
import { type Address, type Hex, parseAbiItem, toEventSelector } from "viem";
import type { Custody } from "../chain/custody.ts";

export type Authorization = { from: Address; to: Address; value: string; validAfter: string; validBefore: string; nonce: Hex; signature: Hex };

export const transferWithAuthorizationTypes = {
  TransferWithAuthorization: [
    { name: "from", type: "address" },
    { name: "to", type: "address" },
    { name: "value", type: "uint256" },
    { name: "validAfter", type: "uint256" },
    { name: "validBefore", type: "uint256" },
    { name: "nonce", type: "bytes32" },
  ],
} as const;

export function randomNonce(): Hex {
  return `0x${randomBytes(32).toString("hex")}`;
}

/** USDC's EIP-712 domain name and version, the same for Base USDC and the dev chain's TestUSDC. */
export const USDC_EIP712 = { name: "USD Coin", version: "2" } as const;

export async function signAuthorization(
  custody: Custody,
  walletIndex: number,
  p: { chainId: number; usdc: Address; to: Address; valueMicros: number; validAfter: number; validBefore: number; nonce: Hex },
  o: { onCallerThread?: boolean } = {},
): Promise<Authorization> {
  const signer = custody.signerFor(walletIndex, o);
  const message = { from: signer.address, to: p.to, value: BigInt(p.valueMicros), validAfter: BigInt(p.validAfter), validBefore: BigInt(p.validBefore), nonce: p.nonce };
  const signature = await signer.signTypedData({
    domain: { ...USDC_EIP712, chainId: p.chainId, verifyingContract: p.usdc },
    types: transferWithAuthorizationTypes,
    primaryType: "TransferWithAuthorization",
    message,
  } as never);
  return { from: signer.address, to: p.to, value: String(p.valueMicros), validAfter: String(p.validAfter), validBefore: String(p.validBefore), nonce: p.nonce, signature };
}

/** USDC (and the test token) emit it for every EIP-3009 transfer. */
export const authorizationUsedEvent = parseAbiItem("event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)");
const AUTHORIZATION_USED_TOPIC = toEventSelector(authorizationUsedEvent).toLowerCase();

/** Where a USDC `Transfer` is on-chain: its block and its index among the block's logs (evidence records it). */
export type TransferLog = { blockNumber: number; logIndex: number };

const TRANSFER_TOPIC = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";

/**
 * The position of the USDC `Transfer` an authorization made, in a successful receipt: USDC emits
 * `AuthorizationUsed(from, nonce)` and then the transfer's `Transfer`, so it is the first matching `Transfer`
 * after that event (two equal transfers in one batched transaction are told apart by their nonces).
 */
export function transferLogIn(
  receipt: { blockNumber: bigint; logs: readonly { address: string; topics: readonly (Hex | undefined)[]; data: Hex; logIndex: number | null }[] },
  usdc: Address,
  a: { from: string; to: string; value: string; nonce: string },
): TransferLog | undefined {
  const word = (v: string) => `0x${v.slice(2).toLowerCase().padStart(64, "0")}`;
  const token = usdc.toLowerCase();
  const ours = (l: (typeof receipt.logs)[number]) => l.address.toLowerCase() === token;
  const used = receipt.logs.findIndex((l) => ours(l) && l.topics[0]?.toLowerCase() === AUTHORIZATION_USED_TOPIC && l.topics[1]?.toLowerCase() === word(a.from) && l.topics[2]?.toLowerCase() === a.nonce.toLowerCase());
  if (used < 0) return undefined;
  const log = receipt.logs.slice(used + 1).find((l) => ours(l) && l.topics[0]?.toLowerCase() === TRANSFER_TOPIC && l.topics[1]?.toLowerCase() === word(a.from) && l.topics[2]?.toLowerCase() === word(a.to) && BigInt(l.data) === BigInt(a.value));
  return log?.logIndex == null ? undefined : { blockNumber: Number(receipt.blockNumber), logIndex: log.logIndex };
}

/** Whether `logs` hold USDC's AuthorizationUsed event for this authorizer and nonce. */
export function authorizationUsedIn(logs: readonly { address: string; topics: readonly (Hex | undefined)[] }[], usdc: Address, a: { from: Address; nonce: Hex }): boolean {
  const token = usdc.toLowerCase();
  const authorizer = `0x${a.from.slice(2).toLowerCase().padStart(64, "0")}`;
  const nonce = a.nonce.toLowerCase();
  return logs.some((l) => l.address.toLowerCase() === token && l.topics[0]?.toLowerCase() === AUTHORIZATION_USED_TOPIC && l.topics[1]?.toLowerCase() === authorizer && l.topics[2]?.toLowerCase() === nonce);
}
