// deps.ts builds every process's dependencies in the same steps, each with its own options; the request
// process's context is given everything at construction and frozen, so nothing fills it in later.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, test } from "vitest";
import { loadConfig } from "../src/config.ts";
import type { AppContext } from "../src/context.ts";
import { assembleContext, createLogger, openDeps } from "../src/deps.ts";
import type { Rails } from "../src/rails/rails.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function sandboxConfig() {
  const dir = mkdtempSync(join(tmpdir(), "aw-deps-"));
  dirs.push(dir);
  return loadConfig({ AGENTWALLET_DATA_DIR: dir });
}

test("behavior: the assembled context is frozen, hooks included: a later assignment throws", async () => {
  const deps = await openDeps(sandboxConfig(), createLogger("silent"), { serveRequests: true });
  try {
    const ctx = assembleContext(deps, { rails: undefined, hooks: { settlementRunning: () => true } }) as AppContext;
    expect(Object.isFrozen(ctx)).toBe(true);
    expect(() => {
      ctx.rails = {} as Rails;
    }).toThrow(TypeError);
    expect(() => {
      ctx.dispatch = () => {};
    }).toThrow(TypeError);
    expect(() => {
      ctx.hooks.depositHint = async () => {};
    }).toThrow(TypeError);
    expect(ctx.rails).toBeUndefined();
    expect(ctx.hooks.settlementRunning?.()).toBe(true);
  } finally {
    await deps.close();
  }
});

test("behavior: a process that serves no requests gets no rate limiter, and no request context from its deps", async () => {
  const deps = await openDeps(sandboxConfig(), createLogger("silent"), { serveRequests: false, instanceId: "parent-1" });
  try {
    expect(deps.rateLimiter).toBeUndefined();
    expect(deps.base.instanceId).toBe("parent-1");
    expect(Object.isFrozen(deps.base)).toBe(true);
    expect(() => assembleContext(deps, { rails: undefined, hooks: {} })).toThrow(/serveRequests/);
  } finally {
    await deps.close();
  }
});
