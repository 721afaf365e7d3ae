/**
 * A text sealed under a key derived from the master key source (deps.ts): AES-256-GCM with the owner's id
 * as associated data, written `v1.<base64 iv>.<base64 ciphertext+tag>`. The database alone (a dump, a
 * backup, a read-only replica) never yields what it holds. Webhook signing secrets and the bank account
 * numbers of payments awaiting their payout are kept this way.
 */
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const BOX_VERSION = "v1";

/** Seals `text` for `owner` (bound in as associated data: a box moved to another row does not open). */
export function sealText(key: Uint8Array, owner: string, text: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  cipher.setAAD(Buffer.from(owner));
  const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final(), cipher.getAuthTag()]);
  return `${BOX_VERSION}.${iv.toString("base64")}.${body.toString("base64")}`;
}

/** The text sealed for `owner`; throws if the box is malformed or the key is not the one it was sealed with. */
export function openText(key: Uint8Array, owner: string, box: string, what: string): string {
  const [version, iv, body] = box.split(".");
  if (version !== BOX_VERSION || !iv || !body) throw new Error(`${what} is not a ${BOX_VERSION} box`);
  const bytes = Buffer.from(body, "base64");
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"));
  decipher.setAAD(Buffer.from(owner));
  decipher.setAuthTag(bytes.subarray(bytes.length - 16));
  return Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString("utf8");
}
