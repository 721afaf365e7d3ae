/**
 * Per-token rate limit over a sliding 60-second window: at most `limit` accepted requests in any
 * 60 s, so 150 requests in a minute give exactly 100 answers and 50 refusals whatever the phase of
 * the clock. Memory store for one node; Redis store (a sorted set per token, updated by one Lua
 * script, so it is atomic across replicas) when REDIS_URL is set.
 */
import type { Redis } from "ioredis";

export type RateDecision = { allowed: boolean; limit: number; remaining: number; resetSeconds: number };
export interface RateLimiter {
  hit(key: string): Promise<RateDecision>;
  close(): Promise<void>;
}

/**
 * The accepted timestamps of one key in the window, in a ring: O(1) per hit however busy the key. It
 * starts small and doubles up to `limit`, so memory follows a token's real traffic, not the setting.
 */
type Ring = { stamps: Float64Array; start: number; count: number; last: number };
const RING_INITIAL = 16;

function grow(ring: Ring, limit: number): void {
  const bigger = new Float64Array(Math.min(limit, ring.stamps.length * 2));
  for (let i = 0; i < ring.count; i++) bigger[i] = ring.stamps[(ring.start + i) % ring.stamps.length]!;
  ring.stamps = bigger;
  ring.start = 0;
}

export function createMemoryRateLimiter(limit: number, windowMs = 60_000, now: () => number = Date.now): RateLimiter {
  const windows = new Map<string, Ring>();
  // Bound memory: forget idle keys periodically.
  const sweep = setInterval(() => {
    const cutoff = now() - windowMs;
    for (const [k, ring] of windows) if (ring.last <= cutoff) windows.delete(k);
  }, windowMs);
  sweep.unref();
  return {
    async hit(key) {
      const t = now();
      let ring = windows.get(key);
      if (!ring) windows.set(key, (ring = { stamps: new Float64Array(Math.min(limit, RING_INITIAL)), start: 0, count: 0, last: t }));
      while (ring.count > 0 && ring.stamps[ring.start]! <= t - windowMs) {
        ring.start = (ring.start + 1) % ring.stamps.length;
        ring.count--;
      }
      const allowed = ring.count < limit;
      if (allowed) {
        if (ring.count === ring.stamps.length) grow(ring, limit);
        ring.stamps[(ring.start + ring.count) % ring.stamps.length] = t;
        ring.count++;
        ring.last = t;
      }
      const oldest = ring.count > 0 ? ring.stamps[ring.start]! : t;
      return { allowed, limit, remaining: Math.max(0, limit - ring.count), resetSeconds: Math.max(1, Math.ceil((oldest + windowMs - t) / 1000)) };
    },
    async close() {
      clearInterval(sweep);
    },
  };
}

const SLIDING_WINDOW_LUA = `
local key = KEYS[1]
local now = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local member = ARGV[4]
redis.call('ZREMRANGEBYSCORE', key, '-inf', now - window)
local count = redis.call('ZCARD', key)
local allowed = 0
if count < limit then
  redis.call('ZADD', key, now, member)
  count = count + 1
  allowed = 1
end
redis.call('PEXPIRE', key, window)
local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
local oldestScore = now
if oldest[2] then oldestScore = tonumber(oldest[2]) end
return {allowed, count, oldestScore}
`;

export function createRedisRateLimiter(redis: Redis, limit: number, windowMs = 60_000, prefix = "aw:rl:"): RateLimiter {
  let seq = 0;
  return {
    async hit(key) {
      const t = Date.now();
      const member = `${t}-${process.pid}-${seq++}-${Math.random().toString(36).slice(2, 8)}`;
      const [allowed, count, oldest] = (await redis.eval(SLIDING_WINDOW_LUA, 1, prefix + key, t, windowMs, limit, member)) as [number, number, number];
      return { allowed: allowed === 1, limit, remaining: Math.max(0, limit - count), resetSeconds: Math.max(1, Math.ceil((Number(oldest) + windowMs - t) / 1000)) };
    },
    async close() {
      await redis.quit().catch(() => undefined);
    },
  };
}
