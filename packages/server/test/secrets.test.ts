import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { createToken } from "../src/services/tokens.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "./support/context.ts";

describe("no plaintext token at rest or in logs", () => {
  let t: TestContext;
  beforeAll(async () => {
    t = await createTestContext("sqlite");
  });
  afterAll(async () => t.close());

  test("after authenticated, refused and revoked requests, neither the database files nor the logs contain a token", async () => {
    const app = buildApp(t.ctx);
    const { project, token } = await projectWithToken(t.ctx);
    const revoked = await createToken(t.ctx, { projectId: project.id, permissions: ["read"], mode: "test" });
    await t.ctx.ledger.tokens.revoke(revoked.id);
    const tokens = [token, revoked.token];
    for (const tok of tokens) {
      for (const url of ["/v1/balance", "/v1/transactions?limit=5", "/v1/stablecoin/address", "/v1/pay"]) {
        await app.inject({ method: url === "/v1/pay" ? "POST" : "GET", url, headers: { authorization: `Bearer ${tok}`, "x-request-id": "r1" }, payload: url === "/v1/pay" ? { recipient: tok } : undefined });
      }
    }
    await app.inject({ method: "GET", url: "/v1/balance", headers: { authorization: `Bearer ${token}x` } });
    await app.close();
    expect(t.logs.length).toBeGreaterThan(5);
    const logText = t.logs.join("");
    const dir = dirname(t.db.sqlitePath!);
    const dbBytes = readdirSync(dir).map((f) => readFileSync(join(dir, f)).toString("latin1")).join("");
    for (const tok of tokens) {
      const secretPart = tok.slice("aw_test_".length + 4);
      expect(logText).not.toContain(secretPart);
      expect(dbBytes).not.toContain(secretPart);
    }
    // The hash is what is stored.
    expect(dbBytes).toMatch(/[0-9a-f]{64}/);
  });
});
