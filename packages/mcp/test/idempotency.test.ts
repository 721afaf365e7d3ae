/** Derived idempotency keys: same arguments within the window → same key; anything else → a new one. */
import { describe, expect, test } from "vitest";
import { AutoIdempotencyKeys, canonicalJson } from "../src/idempotency.ts";

function keys(options: { salt?: string; windowMs?: number; entriesMax?: number } = {}) {
  let nowMs = 1_800_000_000_000;
  const autoKeys = new AutoIdempotencyKeys({ salt: "s", now: () => nowMs, ...options });
  return { autoKeys, advance: (ms: number) => (nowMs += ms) };
}

describe("AutoIdempotencyKeys", () => {
  test("default: identical arguments get the same key, whatever their key order", () => {
    const { autoKeys } = keys();
    const a = autoKeys.keyFor("pay", { recipient: "0xabc", amount_usd: 1, headers: { b: "2", a: "1" } });
    const b = autoKeys.keyFor("pay", { headers: { a: "1", b: "2" }, amount_usd: 1, recipient: "0xabc" });
    expect(b).toBe(a);
    expect(a).toMatch(/^mcp-[0-9a-f]{32}-[0-9a-z]+$/);
  });

  test("behavior: other arguments, another tool or another process salt give another key", () => {
    const { autoKeys } = keys();
    const base = autoKeys.keyFor("pay", { recipient: "0xabc", amount_usd: 1 });
    expect(autoKeys.keyFor("pay", { recipient: "0xabc", amount_usd: 2 })).not.toBe(base);
    expect(autoKeys.keyFor("send_usdc", { recipient: "0xabc", amount_usd: 1 })).not.toBe(base);
    expect(keys({ salt: "other" }).autoKeys.keyFor("pay", { recipient: "0xabc", amount_usd: 1 })).not.toBe(base);
    expect(new AutoIdempotencyKeys().keyFor("pay", {})).not.toBe(new AutoIdempotencyKeys().keyFor("pay", {}));
  });

  test("behavior: the window runs from the first call; after it the same arguments are a new payment", () => {
    const { autoKeys, advance } = keys({ windowMs: 60_000 });
    const first = autoKeys.keyFor("pay", { amount_usd: 1 });
    advance(59_999);
    expect(autoKeys.keyFor("pay", { amount_usd: 1 })).toBe(first);
    advance(1);
    const second = autoKeys.keyFor("pay", { amount_usd: 1 });
    expect(second).not.toBe(first);
    advance(30_000);
    expect(autoKeys.keyFor("pay", { amount_usd: 1 })).toBe(second);
  });

  test("behavior: memory is bounded; the oldest keys are forgotten first", () => {
    const { autoKeys, advance } = keys({ entriesMax: 3 });
    const issued = [1, 2, 3, 4].map((n) => {
      advance(1);
      return autoKeys.keyFor("pay", { n });
    });
    advance(1);
    expect(autoKeys.keyFor("pay", { n: 4 })).toBe(issued[3]);
    expect(autoKeys.keyFor("pay", { n: 1 })).not.toBe(issued[0]);
  });
});

test("canonicalJson: sorted keys at every depth, undefined members dropped", () => {
  expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: undefined, e: null })).toBe('{"b":[{"c":2,"d":1}],"e":null}');
});
