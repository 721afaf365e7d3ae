// The chain client's shared head block, on a real anvil: a number read within the allowed age is
// reused, an older one is read again, and with a refresh age the known number is answered at once
// while a new read starts behind it.
import { afterAll, beforeAll, expect, test } from "vitest";
import { startTestChain, type TestChain } from "../support/chain.ts";

let chain: TestChain;
beforeAll(async () => {
  chain = await startTestChain();
});
afterAll(async () => chain?.stop());

test("behavior: recentBlockNumber reuses a young answer, reads an old one again, and refreshes behind a known one", async () => {
  const c = chain.client;
  const first = await c.recentBlockNumber(60_000);
  expect(first).toBe(await c.blockNumber());

  await chain.mine();
  // Young enough: the known number, no read.
  expect(await c.recentBlockNumber(60_000)).toBe(first);
  // Past the refresh age: still the known number at once, and a read behind it.
  expect(await c.recentBlockNumber(60_000, -1)).toBe(first);
  for (let i = 0; i < 100 && (await c.recentBlockNumber(60_000)) === first; i++) await new Promise((r) => setTimeout(r, 10));
  expect(await c.recentBlockNumber(60_000)).toBe(first + 1);

  await chain.mine();
  // Older than allowed: read again before answering.
  expect(await c.recentBlockNumber(-1)).toBe(first + 2);
});
