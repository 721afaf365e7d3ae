/**
 * Idempotency keys for payment tool calls that come without one. A client (or the model) that retries a
 * call after a timeout sends the same arguments again, never the same JSON-RPC id, so the key is derived
 * from the arguments: identical arguments within the window get the same key, and the API returns the
 * original payment instead of paying twice.
 *
 * The digest is salted per process: two MCP servers on the same token (two agents) paying the same thing
 * at the same moment must both pay, so their keys must differ. The window is counted from the first call,
 * not from clock buckets, so a retry can never straddle a bucket edge and get a fresh key.
 */
import { createHash, randomBytes } from "node:crypto";
import { mcpLimits } from "./config.ts";

export type AutoIdempotencyOptions = {
  /** Per-process secret mixed into every digest; random unless a test pins it. */
  salt?: string;
  now?: () => number;
  windowMs?: number;
  entriesMax?: number;
};

export class AutoIdempotencyKeys {
  readonly windowMs: number;
  private readonly salt: string;
  private readonly now: () => number;
  private readonly entriesMax: number;
  /** digest → key; insertion order is first-use order, so the oldest entries sit at the front. */
  private readonly entries = new Map<string, { key: string; firstAtMs: number }>();

  constructor(options: AutoIdempotencyOptions = {}) {
    this.salt = options.salt ?? randomBytes(16).toString("hex");
    this.now = options.now ?? Date.now;
    this.windowMs = options.windowMs ?? mcpLimits.autoIdempotencyWindowMs;
    this.entriesMax = options.entriesMax ?? mcpLimits.autoIdempotencyEntriesMax;
  }

  /** The key for this tool call: the one already issued for identical arguments within the window, or a new one. */
  keyFor(tool: string, args: Record<string, unknown>): string {
    const nowMs = this.now();
    this.forgetExpired(nowMs);
    const digest = createHash("sha256")
      .update(`${this.salt}\n${tool}\n${canonicalJson(args)}`)
      .digest("hex")
      .slice(0, 32);
    const known = this.entries.get(digest);
    if (known) return known.key;
    const oldest = this.entries.keys().next();
    if (this.entries.size >= this.entriesMax && !oldest.done) this.entries.delete(oldest.value);
    const key = `mcp-${digest}-${nowMs.toString(36)}`;
    this.entries.set(digest, { key, firstAtMs: nowMs });
    return key;
  }

  private forgetExpired(nowMs: number): void {
    for (const [digest, entry] of this.entries) {
      if (nowMs - entry.firstAtMs < this.windowMs) break;
      this.entries.delete(digest);
    }
  }
}

/** JSON with object keys sorted at every depth, so `{a, b}` and `{b, a}` hash alike. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`);
    return `{${entries.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
