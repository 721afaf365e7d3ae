/**
 * Verifies a Bridge webhook as Bridge documents it: header `X-Webhook-Signature: t=<ms>,v0=<base64>`;
 * the signature is RSA (PKCS#1 v1.5, SHA-256) over the SHA-256 digest of `<t>.<raw body>`, checked with
 * the public key Bridge shows for the endpoint. Deliveries older (or newer) than the tolerance are
 * refused: Bridge signs every retry afresh, so a stale signature can only be a replay.
 */
import { createHash, createPublicKey, verify } from "node:crypto";

export type BridgeWebhookCheck = { ok: true } | { ok: false; reason: "missing" | "malformed" | "stale" | "forged" };

/** Bridge advises disregarding events older than 10 minutes. */
export const BRIDGE_WEBHOOK_TOLERANCE_MS = 10 * 60_000;

export function verifyBridgeWebhook(o: { publicKeyPem: string; header: string | undefined; rawBody: string; nowMs: number; toleranceMs?: number }): BridgeWebhookCheck {
  if (!o.header) return { ok: false, reason: "missing" };
  const m = /^t=(\d{1,16}),v0=([A-Za-z0-9+/]+={0,2})$/.exec(o.header.trim());
  if (!m) return { ok: false, reason: "malformed" };
  const t = Number(m[1]);
  if (Math.abs(o.nowMs - t) > (o.toleranceMs ?? BRIDGE_WEBHOOK_TOLERANCE_MS)) return { ok: false, reason: "stale" };
  const digest = createHash("sha256").update(`${m[1]}.${o.rawBody}`).digest();
  let valid = false;
  try {
    valid = verify("sha256", digest, createPublicKey(o.publicKeyPem), Buffer.from(m[2]!, "base64"));
  } catch {
    valid = false;
  }
  return valid ? { ok: true } : { ok: false, reason: "forged" };
}
