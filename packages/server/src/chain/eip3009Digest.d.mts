/** See eip3009Digest.mjs: the digest of a TransferWithAuthorization in the expected shape, else undefined. */
export function transferWithAuthorizationDigest(def: unknown): Uint8Array | undefined;
