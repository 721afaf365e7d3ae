/**
 * Fixtures opened once for the tests of a file (or of one `describe` block): `perFile` registers the hooks that
 * open and close them, and hands back, for each fixture, a stand-in that forwards every read, write and call to the
 * opened value. The tests use it by its name as they would a variable set in `beforeAll`; used before it is
 * opened or after it is closed, it throws.
 */
import { afterAll, beforeAll } from "vitest";

/** A stand-in for the value `current()` answers once opened. */
function standIn<T extends object>(name: string, current: () => T | undefined): T {
  const opened = (): T => {
    const value = current();
    if (value === undefined) throw new Error(`the fixture "${name}" is not open: it is opened before its file's tests and closed after them`);
    return value;
  };
  return new Proxy({} as T, {
    get(_, key) {
      const value = opened();
      const v: unknown = Reflect.get(value, key, value);
      return typeof v === "function" ? v.bind(value) : v;
    },
    set: (_, key, v) => Reflect.set(opened(), key, v),
    has: (_, key) => Reflect.has(opened(), key),
  });
}

/**
 * Opens the fixtures `open` answers (by name) before the tests and hands them to `close` after them; answers a
 * stand-in for each, so `const { server, browser } = perFile(…)` reads like the variables it replaces.
 * `timeoutMs`: how long the opening may take (the configured hook timeout by default).
 */
export function perFile<R extends Record<string, object>>(open: () => Promise<R>, close: (opened: R) => Promise<void>, timeoutMs?: number): R {
  let opened: R | undefined;
  beforeAll(async () => {
    opened = await open();
  }, timeoutMs);
  afterAll(async () => {
    const value = opened;
    opened = undefined;
    if (value) await close(value);
  });
  return new Proxy({} as R, { get: (_, key) => standIn(String(key), () => opened?.[key as keyof R]) });
}
