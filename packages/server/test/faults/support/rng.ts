/**
 * A small seeded generator (mulberry32), so every random choice of a fault scenario (which payment,
 * when to kill what, which call to fault) replays from the printed seed: FAULT_SEED=<seed> npm test.
 */
export type Rng = { seed: number; next(): number; int(lo: number, hi: number): number; chance(p: number): boolean; pick<T>(xs: readonly T[]): T; fork(label: string): Rng };

export function createRng(seed: number): Rng {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
  const rng: Rng = {
    seed,
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick: (xs) => xs[Math.floor(next() * xs.length)]!,
    // An independent stream per consumer, so adding a draw in one place does not shift the others.
    fork: (label) => createRng((seed ^ [...label].reduce((h, c) => Math.imul(h ^ c.charCodeAt(0), 16_777_619), 2_166_136_261)) >>> 0),
  };
  return rng;
}

/** The suite's seed: FAULT_SEED if set, else a fresh one (printed by every scenario). */
export function suiteSeed(): number {
  const fromEnv = process.env.FAULT_SEED;
  if (fromEnv !== undefined && fromEnv !== "") return Number(fromEnv) >>> 0;
  return Math.floor(Math.random() * 4_294_967_296) >>> 0;
}
