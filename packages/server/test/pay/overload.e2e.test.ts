// A payments API answers an overload it can name as one: 503 `service_busy` with Retry-After, saying it is
// temporary and that the same idempotency key is safe to send again. Under 500 concurrent payments over two
// processes on PostgreSQL, the pool's wait for a connection ran out and three answers were 500 internal_error.
// Here a real server (the sandbox, in-process) runs on a pool of one connection with a short wait, the test holds
// that connection, and a payment arrives; on SQLite another connection holds the write lock past the busy
// timeout. Either way nothing is half-written: no payment, no debit, and the key, sent again, pays once. The
// console's pages answer the same overload 503 with Retry-After, saying to try again, not as an internal error.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import SQLite from "better-sqlite3";
import { sql } from "kysely";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { openDb } from "../../src/ledger/db.ts";
import { holdConnections, interceptQueries, paymentRows } from "../../src/ledger/testing.ts";
import { type TestServer, startTestServer } from "../../src/testing/harness.ts";
import { createPgSchema, createTestDb, ledgerOn, postgresUrl } from "../support/db.ts";

const RECIPIENT = "0x90F79bf6EB2c4f870365E785982E1f101E93b906";
const FUNDED_MICROS = 10_000_000n;

function pay(s: TestServer, key: string): Promise<Response> {
  return fetch(`${s.baseUrl}/v1/pay`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
    body: JSON.stringify({ recipient: RECIPIENT, amount_usd: 1, idempotency_key: key }),
  });
}

async function availableMicros(s: TestServer): Promise<number> {
  const r = await fetch(`${s.baseUrl}/v1/balance`, { headers: { authorization: `Bearer ${s.token}` } });
  return ((await r.json()) as { available: number }).available;
}

/** The overload's answer: 503, Retry-After in whole seconds, and a detail that says to send the same key again. */
async function expectBusy(res: Response): Promise<void> {
  const body = (await res.json()) as { code: string; detail: string };
  expect(res.status, JSON.stringify(body)).toBe(503);
  expect(res.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
  expect(body.code).toBe("service_busy");
  expect(body.detail).toMatch(/temporar/i);
  expect(body.detail).toMatch(/same idempotency_key/);
}

/**
 * Sends a request whose hold finds the pool's one connection taken (taken just as the hold asks for it, given
 * back once the answer is in): what it answered.
 */
async function withHoldStarved(s: TestServer, send: () => Promise<Response>): Promise<Response> {
  const ledger = s.server.ctx.ledger;
  let giveBack: (() => Promise<void>) | undefined;
  const restore = interceptQueries(ledger, async (query, next) => {
    if (!giveBack && query.sql.includes("aw_hold_batch")) giveBack = await holdConnections(ledger, 1);
    return next(query);
  });
  let res: Response;
  try {
    res = await send();
  } finally {
    restore();
    await giveBack?.();
  }
  expect(giveBack, "the hold never asked for a connection").toBeDefined();
  return res;
}

/** Nothing of the refused request was kept (`availableBefore`: the balance before it); then the same key pays once, and a repeat answers that payment. */
async function expectNothingDoneThenPaysOnce(s: TestServer, key: string, availableBefore: number): Promise<void> {
  expect(await paymentRows(s.server.ctx.ledger, { projectId: s.projectId, idempotencyKey: key })).toEqual([]);
  expect(await availableMicros(s)).toBe(availableBefore);
  const paid = await pay(s, key);
  expect(paid.status).toBe(201);
  const again = await pay(s, key);
  expect(again.status).toBe(200);
  expect(((await again.json()) as { id: string }).id).toBe(((await paid.json()) as { id: string }).id);
  expect(await paymentRows(s.server.ctx.ledger, { projectId: s.projectId, idempotencyKey: key })).toHaveLength(1);
}

describe("overload on PostgreSQL: no connection free within the pool's wait", () => {
  let s: TestServer;
  let schema: Awaited<ReturnType<typeof createPgSchema>>;
  beforeAll(async () => {
    schema = await createPgSchema();
    s = await startTestServer({ database: "postgres", databaseUrl: schema.url, x402Demo: true, env: { DATABASE_POOL_MAX: "1", DATABASE_POOL_WAIT_MS: "300" } });
    await s.fund(FUNDED_MICROS);
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
    await schema?.drop();
  });

  test("error: the request's first read waits past it → 503 service_busy with Retry-After; nothing done, the same key then pays once", async () => {
    const before = await availableMicros(s);
    const giveBack = await holdConnections(s.server.ctx.ledger, 1);
    let res: Response;
    try {
      res = await pay(s, "busy-at-first-read");
    } finally {
      await giveBack();
    }
    await expectBusy(res);
    await expectNothingDoneThenPaysOnce(s, "busy-at-first-read", before);
  });

  test("error: the console's sign-in meets the held pool → a 503 page with Retry-After that says to try again, not an internal error; then it signs in", async () => {
    const signIn = () =>
      fetch(`${s.baseUrl}/console/signin`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams({ kind: "token", secret: s.token }).toString(),
        redirect: "manual",
      });
    const giveBack = await holdConnections(s.server.ctx.ledger, 1);
    let res: Response;
    try {
      res = await signIn();
    } finally {
      await giveBack();
    }
    const page = await res.text();
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(page).toMatch(/busy right now\. Try again in a few seconds/);
    expect(page).not.toMatch(/Internal error/);
    const after = await signIn();
    expect(after.status).toBe(303);
    expect(after.headers.get("set-cookie")).toMatch(/^aw_console=/);
  });

  test("error: the hold itself waits past it (after the request's reads) → 503; no payment, no debit, the key free", async () => {
    const before = await availableMicros(s);
    const res = await withHoldStarved(s, () => pay(s, "busy-at-hold"));
    await expectBusy(res);
    await expectNothingDoneThenPaysOnce(s, "busy-at-hold", before);
  });

  test("error: the hold and the claim's release both meet the held pool → 503; a moment later the same key pays once (no 409 until the claim's lease ends)", async () => {
    const ledger = s.server.ctx.ledger;
    const paidUrl = s.server.x402Demo!.paidUrl;
    const payX402 = (key: string) =>
      fetch(`${s.baseUrl}/v1/pay`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
        body: JSON.stringify({ recipient: paidUrl, max_amount_usdc: 1_000_000, idempotency_key: key }),
      });
    // Kept until the answer: the claim's release meets the held pool too.
    const res = await withHoldStarved(s, () => payX402("x402-busy"));
    await expectBusy(res);
    expect(await paymentRows(ledger, { projectId: s.projectId, idempotencyKey: "x402-busy" })).toEqual([]);
    // The claim's release is tried again after the answer (first after 250 ms); before, the key answered 409 for a minute.
    await new Promise((r) => setTimeout(r, 1_000));
    const paid = await payX402("x402-busy");
    expect(paid.status, await paid.clone().text()).toBe(200);
    expect(await paymentRows(ledger, { projectId: s.projectId, idempotencyKey: "x402-busy" })).toHaveLength(1);
  });
});

describe("overload on SQLite: another connection holds the write lock past the busy timeout", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer({ database: "sqlite", env: { SQLITE_BUSY_TIMEOUT_MS: "200" } });
    await s.fund(FUNDED_MICROS);
  }, 120_000);
  afterAll(async () => {
    await s?.stop();
  });

  test("error: the hold cannot take the write lock → 503 service_busy with Retry-After; nothing done, the same key then pays once", async () => {
    // Another process's connection (an operator's CLI command, a second server on the file) writing.
    const before = await availableMicros(s);
    const other = new SQLite(join(s.dataDir, "agentwallet.db"));
    let res: Response;
    try {
      other.exec("begin immediate");
      res = await pay(s, "busy-sqlite");
    } finally {
      other.exec("rollback");
      other.close();
    }
    await expectBusy(res);
    await expectNothingDoneThenPaysOnce(s, "busy-sqlite", before);
  });
});

describe("what the ledger names an overload", () => {
  test("error: PostgreSQL refusing another connection (53300, here a role's connection limit) is `connections_refused`", async () => {
    const role = `aw_busy_${randomBytes(4).toString("hex")}`;
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query(`create role ${role} login password 'busy' connection limit 0`);
      const url = new URL(postgresUrl());
      url.username = role;
      url.password = "busy";
      const opened = openDb({ kind: "postgres", url: url.toString(), poolMax: 1 });
      try {
        const err = await ledgerOn(opened).ping().then(() => undefined, (e: unknown) => e);
        expect((err as { code?: string }).code).toBe("53300");
        expect(ledgerOn(opened).overloadOf(err)).toBe("connections_refused");
      } finally {
        await opened.close();
      }
    } finally {
      await admin.query(`drop role if exists ${role}`);
      await admin.end();
    }
  });

  test("default: other database errors are no overload (a server fault stays a 500)", async () => {
    const db = await createTestDb("postgres");
    try {
      const ledger = ledgerOn(db);
      const syntax = await sql`select from nowhere_at_all`.execute(db.db).then(() => undefined, (e: unknown) => e);
      expect(syntax).toBeInstanceOf(Error);
      expect(ledger.overloadOf(syntax)).toBeUndefined();
      expect(ledger.overloadOf(new Error("connect ECONNREFUSED 127.0.0.1:5432"))).toBeUndefined();
      expect(ledger.overloadOf(undefined)).toBeUndefined();
    } finally {
      await db.drop();
    }
  });
});
