// Ids: prefix, time part and random part, all base62; unique across many draws from the shared pool
// of random bytes (each draw takes fresh bytes: two ids never share their random part).
import { expect, test } from "vitest";
import { newId } from "../src/ids.ts";

test("default: kind prefix, then 26 base62 characters", () => {
  expect(newId("txn")).toMatch(/^txn_[0-9A-Za-z]{26}$/);
  expect(newId("mov")).toMatch(/^mov_[0-9A-Za-z]{26}$/);
});

test("behavior: 50,000 ids drawn across many refills of the pool are all distinct, random parts included", () => {
  const ids = Array.from({ length: 50_000 }, () => newId("txn"));
  expect(new Set(ids).size).toBe(ids.length);
  expect(new Set(ids.map((id) => id.slice(-16))).size).toBe(ids.length);
});

test("behavior: an id made later has a greater time part (ids sort roughly by creation)", () => {
  const a = newId("txn");
  const later = Date.now() + 2;
  while (Date.now() < later) {
    /* wait two milliseconds */
  }
  const b = newId("txn");
  expect(a.slice(4, 14) < b.slice(4, 14)).toBe(true);
});
