import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createMemoryRateLimiter, createRedisRateLimiter } from "../src/http/rateLimit.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "./support/context.ts";

describe("rate limit: 100 requests per minute per token", () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext("sqlite", { rateLimit: 100 });
  });
  afterAll(async () => t.close());

  test("150 requests in a minute → exactly 100 succeed, 50 get 429 with Retry-After; another token is unaffected", async () => {
    const app = buildApp(t.ctx);
    const a = await projectWithToken(t.ctx);
    const b = await projectWithToken(t.ctx);
    const results = await Promise.all(
      Array.from({ length: 150 }, () => app.inject({ method: "GET", url: "/v1/balance", headers: { authorization: `Bearer ${a.token}` } })),
    );
    const ok = results.filter((r) => r.statusCode === 200);
    const limited = results.filter((r) => r.statusCode === 429);
    expect(ok).toHaveLength(100);
    expect(limited).toHaveLength(50);
    const one = limited[0]!;
    expect(Number(one.headers["retry-after"])).toBeGreaterThan(0);
    expect(Number(one.headers["retry-after"])).toBeLessThanOrEqual(60);
    expect(one.headers["ratelimit-limit"]).toBe("100");
    expect(one.headers["ratelimit-remaining"]).toBe("0");
    expect(one.json().detail).toMatch(/Rate limit exceeded/);
    expect(ok[0]!.headers["ratelimit-remaining"]).toBeDefined();
    const other = await app.inject({ method: "GET", url: "/v1/balance", headers: { authorization: `Bearer ${b.token}` } });
    expect(other.statusCode).toBe(200);
    await app.close();
  });
});

describe("rate limit on Redis (shared by replicas)", () => {
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(process.env.TEST_REDIS_URL ?? "redis://127.0.0.1:6379", { maxRetriesPerRequest: 1 });
  });
  afterAll(async () => {
    await redis.quit();
  });

  test("two limiters on one Redis share the window: 150 hits across them → exactly 100 allowed", async () => {
    const prefix = `aw:test:${Date.now()}:${Math.random().toString(36).slice(2)}:`;
    const replicaA = createRedisRateLimiter(redis, 100, 60_000, prefix);
    const replicaB = createRedisRateLimiter(redis, 100, 60_000, prefix);
    const decisions = await Promise.all(Array.from({ length: 150 }, (_, i) => (i % 2 ? replicaA : replicaB).hit("tok_1")));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(100);
    expect(decisions.filter((d) => !d.allowed)).toHaveLength(50);
    expect((await replicaA.hit("tok_2")).allowed).toBe(true);
    await redis.del(`${prefix}tok_1`, `${prefix}tok_2`);
  });
});

describe("memory limiter: a sliding window over a growing ring", () => {
  test("slots free exactly as the oldest hits leave the window, across growth and wrap-around", async () => {
    let now = 0;
    const limiter = createMemoryRateLimiter(20, 60_000, () => now);
    for (let i = 0; i < 20; i++) {
      now = i * 1_000;
      expect((await limiter.hit("k")).allowed).toBe(true); // grows 16 → 20 on the way
    }
    now = 30_000;
    expect(await limiter.hit("k")).toMatchObject({ allowed: false, remaining: 0, resetSeconds: 30 });
    for (let round = 0; round < 3; round++) {
      // Each second past the first minute frees exactly the hit made 60 s earlier: the ring wraps.
      for (let i = 0; i < 20; i++) {
        now = 60_000 * (round + 1) + i * 1_000 + 1;
        expect((await limiter.hit("k")).allowed).toBe(true);
        expect((await limiter.hit("k")).allowed).toBe(false);
      }
    }
    await limiter.close();
  });

  test("a huge configured limit costs nothing up front", async () => {
    const limiter = createMemoryRateLimiter(1_000_000_000);
    const before = process.memoryUsage().arrayBuffers;
    for (let i = 0; i < 1_000; i++) await limiter.hit(`token-${i}`);
    expect(process.memoryUsage().arrayBuffers - before).toBeLessThan(10 * 1024 * 1024);
    await limiter.close();
  });
});
