/**
 * EIP-3009 `TransferWithAuthorization`: what a project wallet signs so USDC leaves it without the
 * wallet holding gas. The domain is USDC's ("USD Coin", version "2") on the configured chain.
 */
import { randomBytes } from "node:crypto";
import type { Address, Hex } from "viem";
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

export async function signAuthorization(
  custody: Custody,
  walletIndex: number,
  p: { chainId: number; usdc: Address; to: Address; valueMicros: number; validAfter: number; validBefore: number; nonce: Hex },
): Promise<Authorization> {
  const signer = custody.signerFor(walletIndex);
  const message = { from: signer.address, to: p.to, value: BigInt(p.valueMicros), validAfter: BigInt(p.validAfter), validBefore: BigInt(p.validBefore), nonce: p.nonce };
  const signature = await signer.signTypedData({
    domain: { name: "USD Coin", version: "2", chainId: p.chainId, verifyingContract: p.usdc },
    types: transferWithAuthorizationTypes,
    primaryType: "TransferWithAuthorization",
    message,
  } as never);
  return { from: signer.address, to: p.to, value: String(p.valueMicros), validAfter: String(p.validAfter), validBefore: String(p.validBefore), nonce: p.nonce, signature };
}
