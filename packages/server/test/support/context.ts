/** A real AppContext over a real database for tests; logs are captured so tests can inspect them. */
import { Writable } from "node:stream";
import type { Permission } from "@agentwallet/api";
import { loadConfig } from "../../src/config.ts";
import type { AppContext } from "../../src/context.ts";
import { createHdCustody } from "../../src/chain/custody.ts";
import { createLogger } from "../../src/deps.ts";
import { createApp } from "../../src/http/app.ts";
import { createMetrics } from "../../src/http/metrics.ts";
import { createMemoryRateLimiter } from "../../src/http/rateLimit.ts";
import { newId, systemClock } from "../../src/ids.ts";
import { createToken } from "../../src/services/tokens.ts";
import { createTestDb, ledgerOn, type TestDialect, type TestDb } from "./db.ts";
import { TEST_MNEMONIC } from "./mnemonic.ts";
import { perFile } from "./perFile.ts";

export { TEST_MNEMONIC };

export type TestContext = { ctx: AppContext; db: TestDb; logs: string[]; close(): Promise<void> };

export async function createTestContext(dialect: TestDialect, opts: { rateLimit?: number; env?: NodeJS.ProcessEnv } = {}): Promise<TestContext> {
  const db = await createTestDb(dialect);
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _enc, cb) {
      logs.push(String(chunk));
      cb();
    },
  });
  const config = loadConfig({ AGENTWALLET_DATA_DIR: "/nonexistent-test-dir", ...opts.env });
  const rateLimiter = createMemoryRateLimiter(opts.rateLimit ?? 1_000_000);
  const ctx: AppContext = {
    config,
    ledger: ledgerOn(db),
    custody: createHdCustody(TEST_MNEMONIC),
    clock: systemClock,
    newId,
    logger: createLogger("info", sink),
    rateLimiter,
    rails: undefined,
    hooks: {},
    instanceId: "test",
    bankAccountKey: new Uint8Array(32).fill(7),
  };
  return {
    ctx,
    db,
    logs,
    async close() {
      await rateLimiter.close();
      await db.drop();
    },
  };
}

export function buildApp(ctx: AppContext) {
  return createApp(ctx, { metrics: createMetrics() });
}

/** A test context (`t`) and its app (`app`, `buildApp`) for the tests of one file or `describe` block: opened before them, closed after. */
export function useTestApp(dialect: TestDialect, opts: Parameters<typeof createTestContext>[1] = {}): { t: TestContext; app: ReturnType<typeof buildApp> } {
  return perFile(
    async () => {
      const t = await createTestContext(dialect, opts);
      return { t, app: buildApp(t.ctx) };
    },
    async ({ t, app }) => {
      await app.close();
      await t.close();
    },
  );
}

export async function projectWithToken(ctx: AppContext, permissions: Permission[] = ["read", "pay", "x402"], opts: { expiresInMs?: number; plan?: "free" | "pro" | "business" } = {}) {
  const project = await ctx.ledger.projects.create({ name: "p", plan: opts.plan ?? "free" });
  const { token, id } = await createToken(ctx, { projectId: project.id, permissions, mode: "test", expiresInMs: opts.expiresInMs });
  return { project, token, tokenId: id };
}
