/**
 * Signing secrets of webhook endpoints: made, kept encrypted, and used to sign (Standard Webhooks).
 *
 * A secret is `whsec_` + base64 of 32 random bytes; the bytes are the HMAC key. It must be readable
 * again to sign, so it is stored encrypted with AES-256-GCM under a key derived from the master key
 * source (masterKeys.ts `loadWebhookSecretKey`), the endpoint's id bound in as associated data: the database
 * alone (a dump, a backup, a read-only replica) never yields a secret (decisions.md, "Webhook secrets").
 */
import { createHmac, randomBytes } from "node:crypto";
import { openText, sealText } from "../../domain/secretBox.ts";

const SECRET_PREFIX = "whsec_";
/** 256 bits, the HMAC-SHA256 block-size-safe length Standard Webhooks suggests (24–64 bytes). */
const SECRET_BYTES = 32;

export function newWebhookSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(SECRET_BYTES).toString("base64")}`;
}

/** Encrypts a secret for the endpoint `endpointId`: `v1.<base64 iv>.<base64 ciphertext+tag>`. */
export function sealSecret(key: Uint8Array, endpointId: string, secret: string): string {
  return sealText(key, endpointId, secret);
}

/** The secret sealed for `endpointId`; throws if the key is not the one it was sealed with. */
export function openSecret(key: Uint8Array, endpointId: string, box: string): string {
  return openText(key, endpointId, box, `webhook secret of ${endpointId}`);
}

/**
 * The Standard Webhooks headers of one attempt: `webhook-signature` is `v1,` + base64 of
 * HMAC-SHA256(`id.timestamp.body`) keyed by the base64-decoded part of the `whsec_` secret.
 */
export function signWebhook(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  const signature = createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64");
  return { "webhook-id": id, "webhook-timestamp": String(timestampSeconds), "webhook-signature": `v1,${signature}` };
}
