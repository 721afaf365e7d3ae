// The console's transactions list and its CSV export on real SQLite and PostgreSQL, over a history seeded
// through the ledger's tables (bench/support/seedTransactions.ts) whose payments are attributed to three
// agents, one a sub-agent of another: the export matches GET /v1/transactions row for row (its fee rows
// beside their payments), and every filter and page matches a brute-force read of the same rows.
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { seedTransactions } from "../../../bench/support/seedTransactions.ts";
import { issueToken } from "../src/services/tokens.ts";
import { listPage } from "../src/services/console/transactionList.ts";
import { buildApp, createTestContext, type TestContext } from "./support/context.ts";
import { dialects } from "./support/db.ts";
import { csvFields } from "../../console/src/csv.ts";

const ROWS = 3_000;
const LISTED = "usdc_fund,payment,x402_payment,usdc_transfer";

type ApiTxn = { id: string; type: string; status: string; amount: number; currency: string; created_at: string };

describe.each(dialects)("console transactions list and CSV export (%s)", (dialect) => {
  let t: TestContext;
  let app: ReturnType<typeof buildApp>;
  let base: string;
  let projectId: string;
  let root: string;
  let cookie: string;
  const agents: Record<"research" | "scraper" | "ops", string> = { research: "", scraper: "", ops: "" };

  const api = async <T>(path: string, token = root, body?: unknown): Promise<T> => {
    const res = await fetch(`${base}${path}`, {
      method: body === undefined ? "GET" : "POST",
      headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  /** Every row of GET /v1/transactions with these filters, page by page. */
  const apiAll = async (query: string): Promise<ApiTxn[]> => {
    const out: ApiTxn[] = [];
    for (let after = ""; ; ) {
      const page = await api<{ transactions: ApiTxn[]; has_more: boolean }>(`/v1/transactions?limit=100&${query}${after ? `&starting_after=${after}` : ""}`);
      out.push(...page.transactions);
      if (!page.has_more) return out;
      after = page.transactions[page.transactions.length - 1]!.id;
    }
  };
  const csv = async (query = "") => {
    const res = await fetch(`${base}/console/p/${projectId}/transactions.csv${query}`, { headers: { cookie: `aw_console=${cookie}` } });
    return { status: res.status, type: res.headers.get("content-type"), text: await res.text() };
  };
  const csvIds = (text: string) => text.trim().split("\r\n").slice(1).map((line) => line.split(",")[0]);
  const db = () => t.db.db;

  beforeAll(async () => {
    t = await createTestContext(dialect);
    app = buildApp(t.ctx);
    base = await app.listen({ port: 0, host: "127.0.0.1" });
    const project = await t.ctx.ledger.projects.create({ name: "history", plan: "business" });
    projectId = project.id;
    root = (await issueToken(t.ctx, { projectId, permissions: ["read", "pay", "x402", "delegate"], mode: "test" })).token;
    await seedTransactions({ ctx: t.ctx, dialect, sqlitePath: t.db.sqlitePath, postgresUrl: t.db.url } as never, projectId, ROWS);
    // Three named agents: research, its sub-agent scraper, and ops.
    const research = await api<{ id: string; token: string }>("/v1/tokens", root, { name: "research", permissions: ["read", "pay", "x402", "delegate"] });
    agents.research = research.id;
    agents.scraper = (await api<{ id: string }>("/v1/tokens", research.token, { name: "scraper", permissions: ["read", "x402"] })).id;
    agents.ops = (await api<{ id: string }>("/v1/tokens", root, { name: "ops", permissions: ["read", "pay"] })).id;
    // The seeded payments as the ledger records them: a payment row each, made by one of the three agents in turn.
    const rows = await db().selectFrom("transactions").select(["id", "type", "status", "amount", "currency", "merchant_name", "description", "created_at", "pos"]).where("project_id", "=", projectId).where("type", "in", ["payment", "x402_payment", "usdc_transfer"]).orderBy("pos").execute();
    const fees = new Map((await db().selectFrom("transactions").select(["id", "payment_id", "amount"]).where("type", "=", "platform_fee").where("project_id", "=", projectId).execute()).map((f) => [f.payment_id, f]));
    const owners = [agents.research, agents.scraper, agents.ops];
    const payments = rows.map((r, i) => {
      const fiat = r.type === "payment";
      const fee = fees.get(r.id)!;
      const recipient = r.type === "x402_payment" ? r.description!.replace(/^GET /, "") : r.type === "usdc_transfer" ? `0x${String(1000 + i).padStart(40, "a")}` : r.merchant_name!;
      return {
        id: r.id, project_id: projectId, rail: fiat ? "fiat" : r.type === "x402_payment" ? "x402" : "usdc_transfer", status: r.status,
        amount_units: Number(r.amount), fee_units: Number(fee.amount), amount_micros: Number(r.amount) * (fiat ? 10_000 : 1), fee_micros: Number(fee.amount) * (fiat ? 10_000 : 1),
        currency: r.currency, recipient, recipient_json: fiat ? JSON.stringify({ name: r.merchant_name, account_number: `****${String(i).padStart(4, "0").slice(-4)}`, routing_number: "021000021" }) : null,
        fee_txn_id: fee.id, next_attempt_at: r.created_at, attempts: 0, created_at: r.created_at, updated_at: r.created_at, token_id: owners[i % 3]!,
      };
    });
    for (let i = 0; i < payments.length; i += 200) await db().insertInto("payments").values(payments.slice(i, i + 200) as never).execute();
    const signIn = await fetch(`${base}/console/signin`, { method: "POST", body: new URLSearchParams({ kind: "token", secret: root }), redirect: "manual" });
    cookie = /aw_console=([^;]+)/.exec(signIn.headers.get("set-cookie") ?? "")![1]!;
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await t?.close();
  });

  test("the CSV export is GET /v1/transactions row for row, each payment's fee on its row, with a header", async () => {
    const [file, listed, fees] = await Promise.all([csv(), apiAll(`type=${LISTED}`), apiAll("type=platform_fee")]);
    expect(file.status).toBe(200);
    expect(file.type).toBe("text/csv; charset=utf-8");
    const lines = file.text.split("\r\n");
    expect(lines[0]).toBe("id,created_at_utc,completed_at_utc,agent,agent_token,rail,type,status,counterparty,amount_usd,fee_usd,description,tx_hash,failure_code");
    expect(lines.at(-1)).toBe("");
    const rows = lines.slice(1, -1);
    expect(rows).toHaveLength(listed.length);
    expect(listed.length).toBeGreaterThan(ROWS / 2);
    // A payment's fee row has its payment's instant (seeded events are seconds apart).
    const feeAt = new Map(fees.map((f) => [f.created_at, f]));
    const usd = (amount: number, currency: string) => { const m = currency === "usd" ? amount * 10_000 : amount; return `${Math.floor(m / 1e6)}.${String(m % 1e6).padStart(6, "0").replace(/0+$/, "").padEnd(2, "0")}`; };
    rows.forEach((line, i) => {
      const a = listed[i]!;
      const cells = csvFields(line);
      const fee = a.type === "usdc_fund" ? undefined : feeAt.get(a.created_at);
      expect([cells[0], cells[1], cells[6], cells[7], cells[9], cells[10]], line).toEqual([a.id, a.created_at, a.type, a.status, usd(a.amount, a.currency), fee ? usd(fee.amount, fee.currency) : ""]);
    });
    // The agents and counterparties as the payments recorded them.
    const research = rows.map(csvFields).filter((c) => c[3] === "research");
    expect(research.length).toBeGreaterThan(0);
    const bank = rows.map(csvFields).find((c) => c[5] === "fiat")!;
    expect(bank[8]).toMatch(/^.+ \(account ••••\d{4}\)$/);
  });

  test("an agent's rows, with or without its sub-agents, are its payments' (newest first), in the list and the export", async () => {
    const expected = async (tokens: string[]) =>
      (await db().selectFrom("payments as p").innerJoin("transactions as t", "t.id", "p.id").select("p.id").where("p.token_id", "in", tokens).orderBy("t.created_at", "desc").orderBy("t.pos", "desc").execute()).map((r) => r.id);
    const withSub = await expected([agents.research, agents.scraper]);
    const alone = await expected([agents.research]);
    expect(csvIds((await csv(`?agent=${agents.research}&sub_agents=1`)).text)).toEqual(withSub);
    expect(csvIds((await csv(`?agent=${agents.research}`)).text)).toEqual(alone);
    const page = await listPage(t.ctx, projectId, { agent: agents.research, sub_agents: true }, { limit: 50 });
    expect(page.rows.map((r) => r.id)).toEqual(withSub.slice(0, 50));
    expect([page.total, page.position, page.has_newer, page.has_older]).toEqual([withSub.length, 1, false, true]);
    expect(new Set(page.rows.map((r) => r.agent?.name))).toEqual(new Set(["research", "scraper"]));
    // Another project's token is not an agent of this one.
    const other = await t.ctx.ledger.projects.create({ name: "other", plan: "free" });
    const foreign = await issueToken(t.ctx, { projectId: other.id, permissions: ["read"], mode: "test" });
    expect((await csv(`?agent=${foreign.id}`)).status).toBe(400);
  });

  test("pages go on and back by keyset with their place in the list; the total is the API's count of the same rows", async () => {
    const total = (await api<{ total_count: number }>(`/v1/transactions?limit=1&type=${LISTED}`)).total_count;
    const first = await listPage(t.ctx, projectId, {}, { limit: 50 });
    expect([first.total, first.position, first.has_newer, first.has_older]).toEqual([total, 1, false, true]);
    const second = await listPage(t.ctx, projectId, {}, { limit: 50, starting_after: first.rows.at(-1)!.id });
    expect([second.position, second.has_newer, second.has_older]).toEqual([51, true, true]);
    const back = await listPage(t.ctx, projectId, {}, { limit: 50, ending_before: second.rows[0]!.id });
    expect(back.rows.map((r) => r.id)).toEqual(first.rows.map((r) => r.id));
    expect([back.position, back.has_newer, back.has_older]).toEqual([1, false, true]);
    // Counted on the API's counters (rail, status) and by reading the rows (counterparty): the same places.
    for (const filters of [{ rail: ["x402" as const], status: ["completed"] }, { counterparty: "example" }]) {
      const one = await listPage(t.ctx, projectId, filters, { limit: 20 });
      const two = await listPage(t.ctx, projectId, filters, { limit: 20, starting_after: one.rows.at(-1)!.id });
      expect([two.total, two.position, two.has_newer], JSON.stringify(filters)).toEqual([one.total, 21, true]);
    }
    const completedX402 = (await api<{ total_count: number }>("/v1/transactions?limit=1&type=x402_payment&status=completed")).total_count;
    expect((await listPage(t.ctx, projectId, { rail: ["x402"], status: ["completed"] }, { limit: 1 })).total).toBe(completedX402);
    const api100 = await api<{ transactions: ApiTxn[] }>(`/v1/transactions?limit=100&type=${LISTED}`);
    expect([...first.rows, ...second.rows].map((r) => r.id)).toEqual(api100.transactions.map((r) => r.id));
  });

  test("rail, counterparty and amount filters match a brute-force read of the same rows", async () => {
    const fiat = await apiAll("type=payment");
    expect(csvIds((await csv("?rail=fiat")).text)).toEqual(fiat.map((r) => r.id));
    const all = await apiAll(`type=${LISTED}`);
    const { rows } = await sql<{ id: string; recipient: string | null; merchant_name: string | null; description: string | null }>`
      select t.id, p.recipient, t.merchant_name, t.description from transactions t left join payments p on p.id = t.id where t.project_id = ${projectId} and t.type <> 'platform_fee'`.execute(db());
    const byId = new Map(rows.map((r) => [r.id, r]));
    const contains = all.filter((a) => { const r = byId.get(a.id)!; return (r.recipient ?? r.merchant_name ?? r.description ?? "").toLowerCase().includes("maps.example"); }).map((a) => a.id);
    expect(contains.length).toBeGreaterThan(0);
    expect(csvIds((await csv("?counterparty=MAPS.example")).text)).toEqual(contains);
    const micros = (a: ApiTxn) => (a.currency === "usd" ? a.amount * 10_000 : a.amount);
    const ranged = all.filter((a) => micros(a) >= 1_000_000 && micros(a) <= 2_500_000).map((a) => a.id);
    expect(ranged.length).toBeGreaterThan(0);
    expect(csvIds((await csv("?min_usd=1&max_usd=2.50")).text)).toEqual(ranged);
    const page = await listPage(t.ctx, projectId, { rail: ["x402"], counterparty: "maps.example", min_usd: "1" }, { limit: 10 });
    expect(page.rows.every((r) => r.rail === "x402" && r.counterparty?.kind === "x402" && r.counterparty.host === "maps.example" && r.amount_micros >= 1_000_000)).toBe(true);
  });

  test("error: bad filters are 400 with a sentence, before any CSV is written", async () => {
    for (const q of ["?min_usd=abc", "?rail=cheque", "?created_after=yesterday", `?counterparty=${"x".repeat(201)}`]) {
      const res = await csv(q);
      expect([res.status, res.type], q).toEqual([400, "text/html; charset=utf-8"]);
    }
  });
});
