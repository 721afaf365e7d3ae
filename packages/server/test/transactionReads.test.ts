// GET /v1/transactions/{id}, and the list's filters and cursor checked against a brute-force filter of
// the same generated history, on both databases.
import { ErrorBody, TransactionDetail, TransactionList, TransactionStatus, TransactionType, buildOpenApiDocument, createWalletClient } from "@agentwallet/api";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { newId } from "../src/ids.ts";
import type { NewPayment } from "../src/ledger/payments.ts";
import { buildApp, createTestContext, projectWithToken, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { insertTransactions, setTransactionCount, setTransactionStatus, shiftTransactionCount } from "../src/ledger/testing.ts";

const TYPES = TransactionType.options;
const STATUSES = TransactionStatus.options;
const DAY0 = Date.parse("2026-03-01T00:00:00.000Z");
const DAYS = 6;
const HISTORY_ROWS = 300;

type Row = { id: string; type: string; status: string; created_at: string; pos: number };

/** A history in recording order whose creation times are not (times repeat, days are crossed, order differs from positions). */
function generateHistory(seed: number): { rows: Row[]; statusChanges: [number, string][] } {
  const [spec] = fc.sample(
    fc.record({
      rows: fc.array(
        fc.record({ type: fc.constantFrom(...TYPES), status: fc.constantFrom(...STATUSES), ms: fc.integer({ min: 0, max: DAYS * 86_400_000 - 1 }), repeat: fc.boolean() }),
        { minLength: HISTORY_ROWS, maxLength: HISTORY_ROWS },
      ),
      changes: fc.array(fc.tuple(fc.nat({ max: HISTORY_ROWS - 1 }), fc.constantFrom(...STATUSES)), { minLength: 40, maxLength: 40 }),
    }),
    { seed, numRuns: 1 },
  );
  let last = DAY0;
  const rows = spec!.rows.map((r, i) => {
    // Some rows share the time of the one before: ties are broken by position.
    const at = r.repeat && i > 0 ? last : DAY0 + r.ms;
    last = at;
    return { id: newId("txn"), type: r.type, status: r.status, created_at: new Date(at).toISOString(), pos: i + 1 };
  });
  return { rows, statusChanges: spec!.changes };
}

/** What the API must answer, computed from the rows alone. */
function expected(rows: Row[], q: Query): { ids: string[]; total: number; hasMore: boolean } {
  const filtered = q.types !== undefined || q.statuses !== undefined || q.after !== undefined || q.before !== undefined;
  const matching = rows.filter(
    (r) =>
      (q.types === undefined || q.types.includes(r.type)) &&
      (q.statuses === undefined || q.statuses.includes(r.status)) &&
      (q.after === undefined || r.created_at > q.after) &&
      (q.before === undefined || r.created_at < q.before),
  );
  // Unfiltered pages go by position (recording order); filtered ones by creation time, then position.
  const ordered = !filtered ? [...matching].sort((a, b) => b.pos - a.pos) : [...matching].sort((a, b) => (a.created_at === b.created_at ? b.pos - a.pos : a.created_at < b.created_at ? 1 : -1));
  const c = q.cursor === undefined ? undefined : rows.find((r) => r.id === q.cursor)!;
  const listedAfter = (r: Row) => (!filtered ? r.pos < c!.pos : r.created_at < c!.created_at || (r.created_at === c!.created_at && r.pos < c!.pos));
  const after = c ? ordered.filter(listedAfter) : ordered;
  const offset = q.offset ?? 0;
  const limit = q.limit ?? 50;
  const page = after.slice(offset, offset + limit);
  return { ids: page.map((r) => r.id), total: matching.length, hasMore: after.length > offset + limit };
}

type Query = { types?: string[]; statuses?: string[]; after?: string; before?: string; limit?: number; offset?: number; cursor?: string; repeated?: boolean };

function toUrl(q: Query): string {
  const p = new URLSearchParams();
  const list = (name: string, v: string[] | undefined) => {
    if (v === undefined) return;
    if (q.repeated) for (const x of v) p.append(name, x);
    else p.set(name, v.join(","));
  };
  list("type", q.types);
  list("status", q.statuses);
  if (q.after !== undefined) p.set("created_after", q.after);
  if (q.before !== undefined) p.set("created_before", q.before);
  if (q.limit !== undefined) p.set("limit", String(q.limit));
  if (q.offset !== undefined) p.set("offset", String(q.offset));
  if (q.cursor !== undefined) p.set("starting_after", q.cursor);
  const qs = p.toString();
  return `/v1/transactions${qs ? `?${qs}` : ""}`;
}

describe.each(dialects)("transaction reads on %s", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let a: Awaited<ReturnType<typeof projectWithToken>>;
  let b: Awaited<ReturnType<typeof projectWithToken>>;
  let history: Row[];

  beforeAll(async () => {
    t = await createTestContext(dialect);
    app = buildApp(t.ctx);
    a = await projectWithToken(t.ctx);
    b = await projectWithToken(t.ctx);
    const h = generateHistory(dialect === "sqlite" ? 17 : 18);
    const ledger = t.ctx.ledger;
    for (let i = 0; i < h.rows.length; i += 100) {
      await insertTransactions(ledger, h.rows.slice(i, i + 100).map((r) => ({ id: r.id, project_id: a.project.id, payment_id: null, type: r.type, status: r.status, amount: r.pos, currency: "usdc" as const, description: null, merchant_name: null, created_at: r.created_at, completed_at: null, pos: r.pos })));
    }
    // Status changes after the rows were recorded, as payments move on.
    for (const [i, status] of h.statusChanges) {
      await setTransactionStatus(ledger, h.rows[i]!.id, status);
      h.rows[i]!.status = status;
    }
    await setTransactionCount(ledger, a.project.id, h.rows.length);
    history = h.rows;
    // Project B has rows in the same days: nothing of them may show in A's answers.
    const other = generateHistory(99).rows.slice(0, 50);
    await insertTransactions(ledger, other.map((r) => ({ id: r.id, project_id: b.project.id, payment_id: null, type: r.type, status: r.status, amount: r.pos, currency: "usdc" as const, description: null, merchant_name: null, created_at: r.created_at, completed_at: null, pos: r.pos })));
    await setTransactionCount(ledger, b.project.id, other.length);
  });
  afterAll(async () => {
    await app.close();
    await t.close();
  });

  const get = (url: string, token = a.token) => app.inject({ method: "GET", url, headers: { authorization: `Bearer ${token}` } });

  const time = fc.oneof(
    fc.integer({ min: -1, max: DAYS }).map((d) => new Date(DAY0 + d * 86_400_000).toISOString()), // day boundaries
    fc.integer({ min: 0, max: DAYS * 86_400_000 }).map((ms) => new Date(DAY0 + ms).toISOString()),
    fc.nat({ max: HISTORY_ROWS - 1 }).map((i) => history[i]!.created_at), // exactly a row's time
  );
  const subset = <T extends string>(all: readonly T[]) => fc.option(fc.uniqueArray(fc.constantFrom(...all), { minLength: 1, maxLength: all.length }), { nil: undefined });
  const query = fc
    .record({
      types: subset(TYPES),
      statuses: subset(STATUSES),
      after: fc.option(time, { nil: undefined }),
      before: fc.option(time, { nil: undefined }),
      limit: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
      page: fc.oneof(
        fc.constant({}),
        fc.integer({ min: 0, max: 320 }).map((offset) => ({ offset })),
        fc.nat({ max: HISTORY_ROWS - 1 }).map((i) => ({ cursor: i })),
      ),
      repeated: fc.boolean(),
    })
    .map(({ page, ...q }): Query => ({ ...q, ...("offset" in page ? { offset: page.offset } : {}), ...("cursor" in page ? { cursor: history[page.cursor]!.id } : {}) }));

  test("behavior: every combination of filters, offset and cursor answers what a brute-force filter of the same rows gives", async () => {
    await fc.assert(
      fc.asyncProperty(query, async (q) => {
        const res = await get(toUrl(q));
        expect(res.statusCode, res.body).toBe(200);
        const body = TransactionList.parse(res.json());
        const want = expected(history, q);
        expect(body.transactions.map((x) => x.id)).toEqual(want.ids);
        expect(body.total_count).toBe(want.total);
        expect(body.has_more).toBe(want.hasMore);
      }),
      { numRuns: dialect === "sqlite" ? 300 : 150, seed: 20_261_124 },
    );
  });

  test.each([
    ["type", { types: ["x402_payment"] }],
    ["status", { statuses: ["failed", "reversed"] }],
    ["created_after", { after: "2026-03-03T12:00:00.000Z" }],
    ["created_before", { before: "2026-03-03T12:00:00.000Z" }],
    ["all filters", { types: ["usdc_transfer", "platform_fee", "payment"], statuses: ["completed"], after: "2026-03-02T00:00:00.000Z", before: "2026-03-05T06:00:00.000Z" }],
    ["no filter", {}],
  ] as [string, Query][])("behavior: following starting_after page by page (%s) lists every matching row once, in order", async (_name, filter) => {
    const all = expected(history, { ...filter, limit: HISTORY_ROWS }).ids;
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let pages = 0; pages <= HISTORY_ROWS; pages++) {
      const body = TransactionList.parse((await get(toUrl({ ...filter, limit: 7, cursor }))).json());
      seen.push(...body.transactions.map((x) => x.id));
      if (!body.has_more) break;
      cursor = body.transactions.at(-1)!.id;
    }
    expect(seen).toEqual(all);
  });

  test("behavior: times with an offset, a date alone and sub-millisecond precision mean the same instants", async () => {
    const at = history[10]!.created_at;
    const plus2 = new Date(Date.parse(at) + 2 * 3_600_000).toISOString().replace(/\.(\d{3})Z$/, ".$1+02:00");
    const a1 = TransactionList.parse((await get(toUrl({ after: at }))).json());
    const a2 = TransactionList.parse((await get(toUrl({ after: plus2 }))).json());
    expect(a2.total_count).toBe(a1.total_count);
    // Strictly before at + 0.0005 ms keeps a row created at `at`; strictly after it drops the row.
    const finer = at.replace("Z", "5Z");
    expect(TransactionList.parse((await get(toUrl({ before: finer }))).json()).total_count).toBe(expected(history, { before: new Date(Date.parse(at) + 1).toISOString() }).total);
    expect(TransactionList.parse((await get(toUrl({ after: finer }))).json()).total_count).toBe(expected(history, { after: at }).total);
    const dateOnly = TransactionList.parse((await get("/v1/transactions?created_before=2026-03-03")).json());
    expect(dateOnly.total_count).toBe(expected(history, { before: "2026-03-03T00:00:00.000Z" }).total);
  });

  test.each([
    ["type=refund", /'type' must be one or more of fund, payment/],
    ["type=", /'type' must be one or more of/],
    ["status=done", /'status' must be one or more of pending, processing/],
    ["created_after=yesterday", /'created_after' must be an ISO 8601 time/],
    ["created_before=2026-03-01T10:00:00", /'created_before' must be an ISO 8601 time with a time zone/],
    ["created_after=2026-02-30T00:00:00Z", /'created_after' must be an ISO 8601 time/],
    ["created_after=2026-03-01T00:00:00Z&created_after=2026-03-02T00:00:00Z", /'created_after' may be given once/],
    ["starting_after=txn_nope", /'starting_after' names no transaction of this project/],
    ["offset=5&starting_after=TXN", /'starting_after' and 'offset' cannot be combined/],
    ["status=completed&offset=1001", /'offset' must be at most 1000 with filters .*starting_after/],
  ])("error: %s → 400 invalid_query", async (qs, detail) => {
    const res = await get(`/v1/transactions?${qs.replace("TXN", history[0]!.id)}`);
    expect(res.statusCode).toBe(400);
    const body = ErrorBody.parse(res.json());
    expect(body.code).toBe("invalid_query");
    expect(body.detail).toMatch(detail);
  });

  test("error: a cursor naming another project's transaction is refused, as an unknown one", async () => {
    const res = await get(`/v1/transactions?starting_after=${history[0]!.id}`, b.token);
    expect(res.statusCode).toBe(400);
    expect(res.json().detail).toMatch(/names no transaction of this project/);
  });

  test("behavior: verify-ledger finds the kept counts equal to the rows, and names a count that is not", async () => {
    const counted = async () => (await t.ctx.ledger.verify()).problems.filter((p) => p.check === "transaction_counts_match");
    expect(await counted()).toEqual([]);
    if (dialect !== "sqlite") return;
    const key = { projectId: a.project.id, day: history[0]!.created_at.slice(0, 10), type: history[0]!.type, status: history[0]!.status };
    await shiftTransactionCount(t.ctx.ledger, key, 1);
    expect(await counted()).toEqual([expect.objectContaining({ detail: expect.stringContaining(a.project.id) })]);
    await shiftTransactionCount(t.ctx.ledger, key, -1);
  });

  test("behavior: a filtered offset up to 1000 and an unfiltered deep offset still work", async () => {
    expect((await get("/v1/transactions?status=completed&offset=1000")).statusCode).toBe(200);
    expect((await get("/v1/transactions?offset=100000")).statusCode).toBe(200);
  });

  test("behavior: the typed client sends the filters and reads one transaction; OpenAPI lists both", async () => {
    const client = createWalletClient({
      baseUrl: "http://api.test",
      token: a.token,
      fetch: async (url, init) => {
        const r = await app.inject({ method: init?.method as "GET", url: String(url).replace("http://api.test", ""), headers: init?.headers as Record<string, string> });
        return new Response(r.body, { status: r.statusCode, headers: r.headers as Record<string, string> });
      },
    });
    const q = { types: ["x402_payment", "platform_fee"], statuses: ["completed"], after: "2026-03-02T00:00:00.000Z", limit: 5 };
    const page = await client.listTransactions({ type: ["x402_payment", "platform_fee"], status: ["completed"], created_after: q.after, limit: 5 });
    expect(page.data.transactions.map((x) => x.id)).toEqual(expected(history, q).ids);
    const next = await client.listTransactions({ type: ["x402_payment", "platform_fee"], status: ["completed"], created_after: q.after, limit: 5, starting_after: page.data.transactions.at(-1)!.id });
    expect(next.data.transactions.map((x) => x.id)).toEqual(expected(history, { ...q, limit: 10 }).ids.slice(5));
    expect((await client.getTransaction(history[3]!.id)).data).toMatchObject({ id: history[3]!.id, rail: null });

    const doc = buildOpenApiDocument() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
    expect(doc.paths["/v1/transactions/{id}"]!.get!.parameters).toEqual([expect.objectContaining({ name: "id", in: "path" })]);
    expect(doc.paths["/v1/transactions"]!.get!.parameters!.map((x) => x.name)).toEqual(["limit", "offset", "type", "status", "created_after", "created_before", "starting_after"]);
    expect(doc.paths["/v1/pay"]!.post!.parameters).toEqual([expect.objectContaining({ name: "Idempotency-Key", in: "header" })]);
  });

  describe("GET /v1/transactions/{id}", () => {
    const payment = (over: Partial<NewPayment>): NewPayment => ({
      projectId: "",
      rail: "usdc_transfer",
      railTxnType: "usdc_transfer",
      amountUnits: 1_000_000,
      feeUnits: 20_000,
      amountMicros: 1_000_000,
      feeMicros: 20_000,
      currency: "usdc",
      recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
      recipientJson: null,
      merchantName: null,
      description: "by id",
      idempotencyKey: null,
      railState: null,
      inFlightUntil: new Date().toISOString(),
      leaseOwner: "test",
      ...over,
    });
    let p: Awaited<ReturnType<typeof projectWithToken>>;
    beforeAll(async () => {
      p = await projectWithToken(t.ctx);
      const key = { chain: "base", txHash: "0xdeposit", logIndex: 0 };
      await t.ctx.ledger.deposits.recordSeen({ ...key, projectId: p.project.id, toAddress: "0x0", fromAddress: "0x1", amountMicros: 100_000_000, blockNumber: 1, blockHash: "0xh" });
      await t.ctx.ledger.deposits.credit(key);
    });

    test("default: a payment shows its rail, recipient, hash, fee id and metadata; its fee row points back to it", async () => {
      const held = await t.ctx.ledger.payments.hold(payment({ projectId: p.project.id, metadata: { order_id: "A-17", customer: "ünïcode ✓" } }));
      if (held.kind !== "held") throw new Error(held.kind);
      await t.ctx.ledger.payments.updatePayment(held.payment.id, { status: "processing", txHash: "0xabc" });
      const res = await get(`/v1/transactions/${held.payment.id}`, p.token);
      expect(res.statusCode).toBe(200);
      const body = TransactionDetail.parse(res.json());
      expect(body).toEqual({
        id: held.payment.id,
        type: "usdc_transfer",
        status: "processing",
        amount: 1_000_000,
        currency: "usdc",
        description: "by id",
        merchant_name: null,
        created_at: held.payment.createdAt,
        completed_at: null,
        rail: "usdc_transfer",
        recipient: "0x90F79bf6EB2c4f870365E785982E1f101E93b906",
        tx_hash: "0xabc",
        payment_id: held.payment.feeTxnId,
        metadata: { order_id: "A-17", customer: "ünïcode ✓" },
      });
      const fee = TransactionDetail.parse((await get(`/v1/transactions/${held.payment.feeTxnId}`, p.token)).json());
      expect(fee).toMatchObject({ type: "platform_fee", amount: 20_000, rail: "usdc_transfer", recipient: null, tx_hash: null, payment_id: held.payment.id, metadata: null });
      // The list shows the same metadata on the payment's row.
      const list = TransactionList.parse((await get("/v1/transactions?limit=2", p.token)).json());
      expect(list.transactions.map((x) => x.metadata)).toEqual([{ order_id: "A-17", customer: "ünïcode ✓" }, null]);
    });

    test("behavior: a bank payment shows the holder's name and the last four digits only; a failure shows its message", async () => {
      const bank = { name: "Acme Hosting LLC", account_number: "000123456789", routing_number: "021000021" };
      const held = await t.ctx.ledger.payments.hold(payment({ projectId: p.project.id, rail: "fiat", railTxnType: "payment", currency: "usd", amountUnits: 500, feeUnits: 10, amountMicros: 5_000_000, feeMicros: 100_000, recipient: bank.name, recipientJson: JSON.stringify(bank), merchantName: bank.name }));
      if (held.kind !== "held") throw new Error(held.kind);
      await t.ctx.ledger.payments.resolve(held.payment.id, "failed", { failureReason: "payout rejected by the bank" });
      const res = await get(`/v1/transactions/${held.payment.id}`, p.token);
      expect(res.body).not.toContain("000123456789");
      expect(res.body).not.toContain("12345678");
      expect(TransactionDetail.parse(res.json())).toMatchObject({ type: "payment", status: "failed", rail: "fiat", recipient: "Acme Hosting LLC (account ending 6789)", tx_hash: null, failure_message: "payout rejected by the bank", metadata: null });
    });

    test("behavior: a deposit shows its on-chain hash and no payment fields", async () => {
      const list = TransactionList.parse((await get("/v1/transactions?type=usdc_fund", p.token)).json());
      const body = TransactionDetail.parse((await get(`/v1/transactions/${list.transactions[0]!.id}`, p.token)).json());
      expect(body).toMatchObject({ type: "usdc_fund", status: "completed", amount: 100_000_000, rail: null, recipient: null, tx_hash: "0xdeposit", payment_id: null, metadata: null });
      expect(body).not.toHaveProperty("failure_code");
    });

    test("error: another project's transaction and an unknown id are both 404 with the same answer", async () => {
      const other = await get(`/v1/transactions/${history[0]!.id}`, p.token);
      const unknown = await get(`/v1/transactions/txn_doesnotexist`, p.token);
      for (const res of [other, unknown]) {
        expect(res.statusCode).toBe(404);
        expect(ErrorBody.parse(res.json())).toMatchObject({ code: "transaction_not_found", detail: expect.stringMatching(/^No transaction txn_\w+ in this project/) });
      }
    });

    test("error: without the read permission, 403", async () => {
      const payOnly = await projectWithToken(t.ctx, ["pay"]);
      expect((await get(`/v1/transactions/${history[0]!.id}`, payOnly.token)).statusCode).toBe(403);
    });
  });
});
