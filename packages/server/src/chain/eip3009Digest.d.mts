/** See eip3009Digest.mjs. */
import type { Hex } from "viem";
import type { HDAccount } from "viem/accounts";

/** The digest of a TransferWithAuthorization in the expected shape, else undefined. */
export function transferWithAuthorizationDigest(def: unknown): Uint8Array | undefined;
/** As viem's `account.signTypedData(def)`, an EIP-3009 authorization's digest taken by transferWithAuthorizationDigest. */
export function signTypedDataOf(account: HDAccount, def: unknown): Promise<Hex>;
