/**
 * Where the time of a read request goes, measured in-process with no HTTP, one call at a time:
 * the token lookup every request makes, the balance read, and a transaction page, each through the
 * service's Kysely query, as the same SQL on the raw driver prepared per call (what Kysely's
 * drivers do), and prepared once (what a statement cache would give). For deep pages, the same page
 * and the database's plan for the deepest page (a range of positions, see migration 0002). Each filtered or cursor
 * page through the service, and the plan of each of its statements (PostgreSQL: with their times).
 */
import SQLite from "better-sqlite3";
import { type CompiledQuery, Kysely, PostgresDialect, SqliteDialect } from "kysely";
import pg from "pg";
import { parseListQuery } from "../../packages/server/src/http/listQuery.ts";
import { Balances } from "../../packages/server/src/ledger/balances.ts";
import type { Database } from "../../packages/server/src/ledger/schema.ts";
import { TransactionReads } from "../../packages/server/src/ledger/transactionReads.ts";
import { listTransactions } from "../../packages/server/src/services/listTransactions.ts";
import { hashToken } from "../../packages/server/src/tokens.ts";
import { type PlanNode, planNodes } from "../../packages/server/test/support/plans.ts";
import { timeAsync } from "../lib.ts";
import type { BenchContext } from "./benchContext.ts";
import { dbOf } from "../../packages/server/src/ledger/connection.ts";

export type DiagnosticRow = { operation: string; samples: number; p50Ms: number; p99Ms: number; meanMs: number };
export type Diagnostics = { rows: DiagnosticRow[]; plans: Record<string, string[]> };
export type DiagnosticsInput = {
  projectId: string;
  token: string;
  offsets: number[];
  pageLimit: number;
  samples: number;
  deepSamples: number;
  /** Per operation: a slow one gets fewer samples, never an endless run. */
  maxSeconds: number;
  /** The filtered and cursor pages (a name, and the query string after `?`) to time and whose plans to show. */
  filtered?: { name: string; query: string }[];
};


export async function readDiagnostics(bench: BenchContext, input: DiagnosticsInput): Promise<Diagnostics> {
  const { ledger } = bench.ctx;
  const db = dbOf(ledger);
  const raw = await openRaw(bench);
  try {
    const rows: DiagnosticRow[] = [];
    const measure = async (operation: string, samples: number, fn: () => Promise<unknown> | unknown) => {
      rows.push({ operation, ...(await timeAsync(samples, Math.min(20, samples), input.maxSeconds, fn)) });
    };
    const threeWays = async (what: string, samples: number, viaService: () => Promise<unknown>, compiled: { sql: string; parameters: readonly unknown[] }) => {
      const params = [...compiled.parameters];
      const prepared = await raw.prepare(compiled.sql);
      await measure(`${what}: service (Kysely)`, samples, viaService);
      await measure(`${what}: same SQL, raw driver, prepared per call`, samples, () => raw.query(compiled.sql, params));
      await measure(`${what}: same SQL, raw driver, prepared once`, samples, () => prepared(params));
    };

    // The same queries as Ledger.tokens.findByHash and Ledger.balances.get, compiled to read their SQL.
    const hash = hashToken(input.token);
    const authQuery = db
      .selectFrom("api_tokens")
      .innerJoin("projects", "projects.id", "api_tokens.project_id")
      .select(["api_tokens.id", "api_tokens.project_id", "api_tokens.permissions", "api_tokens.expires_at", "api_tokens.revoked_at", "projects.paused", "projects.plan"])
      .where("api_tokens.token_hash", "=", hash)
      .compile();
    await threeWays("auth token lookup", input.samples, () => ledger.tokens.findByHash(hash), authQuery);
    const balanceQuery = db
      .selectFrom("balances")
      .innerJoin("projects", "projects.id", "balances.project_id")
      .select(["balances.available_micros", "balances.held_micros", "balances.pending_micros", "balances.total_funded_micros", "balances.total_spent_micros", "balances.tx_count", "projects.wallet_address"])
      .where("balances.project_id", "=", input.projectId)
      .compile();
    await threeWays("balance read", input.samples, () => ledger.balances.get(input.projectId), balanceQuery);

    const plans: Record<string, string[]> = {};
    const deepest = Math.max(...input.offsets);
    const total = Number((await ledger.balances.get(input.projectId))!.tx_count);
    for (const offset of input.offsets) {
      const n = offset === 0 ? input.samples : input.deepSamples;
      // The rows half of Ledger.balances.listTransactions: positions (N - offset - limit, N - offset].
      const top = total - offset;
      const pageQuery = db
        .selectFrom("transactions")
        .select(["id", "type", "status", "amount", "currency", "description", "merchant_name", "created_at", "completed_at"])
        .where("project_id", "=", input.projectId)
        .where("pos", "<=", top)
        .where("pos", ">", top - input.pageLimit)
        .orderBy("pos", "desc")
        .compile();
      await threeWays(`page at offset ${offset}`, n, () => ledger.balances.listTransactions(input.projectId, input.pageLimit, offset), pageQuery);
      if (offset === deepest) plans[`page at offset ${offset} (position range)`] = await raw.plan(pageQuery.sql, [...pageQuery.parameters]);
    }
    if (input.filtered) {
      // Each filtered or cursor page through the service (on PostgreSQL its prepared statements), without HTTP: what
      // of the page's time over HTTP is the database's and the service's.
      for (const c of input.filtered) {
        const { startingAfter, ...q } = parseListQuery(Object.fromEntries(new URLSearchParams(c.query)));
        const cursor = startingAfter === undefined ? undefined : await ledger.transactions.cursorOf(input.projectId, startingAfter);
        await measure(`${c.name}: service (in-process)`, input.samples, () => listTransactions({ ledger }, input.projectId, { ...q, ...(cursor ? { cursor } : {}) }));
      }
      Object.assign(plans, await filteredPlans(bench, input.projectId, input.filtered));
    }
    return { rows, plans };
  } finally {
    await raw.close();
  }
}

/**
 * The plans of every statement a filtered or cursor page issues (GET /v1/transactions's service over a Kysely that
 * records them). PostgreSQL: run with `EXPLAIN ANALYZE`, per statement each read of a table, by scan and index, with
 * the most rows one read returned. Index ranges only, none past a page (transactionListPlans.test.ts holds the service
 * to it); a count of matching rows would show as a scan of the whole range under an aggregate. Each statement's times
 * are for its values, unprepared: "planned" is what a call would pay without the service's prepared statements, which
 * are planned once per connection. SQLite: `EXPLAIN QUERY PLAN`, each read of a table (a SEARCH on an index range, or
 * a SCAN of the whole table) and each sort in a temporary B-tree, in order (transactionListPlansSqlite.test.ts).
 */
async function filteredPlans(bench: BenchContext, projectId: string, cases: { name: string; query: string }[]): Promise<Record<string, string[]>> {
  const issued: CompiledQuery[] = [];
  const log = (e: { level: string; query: CompiledQuery }) => void (e.level === "query" && issued.push(e.query));
  const pool = bench.dialect === "postgres" ? new pg.Pool({ connectionString: bench.postgresUrl!, max: 2 }) : undefined;
  const raw = pool ? undefined : new SQLite(bench.sqlitePath!, { readonly: true });
  const traced = new Kysely<Database>({ dialect: pool ? new PostgresDialect({ pool }) : new SqliteDialect({ database: new SQLite(bench.sqlitePath!) }), log });
  const explain = async (statement: CompiledQuery, i: number): Promise<string> => {
    if (raw) {
      const steps = (raw.prepare(`explain query plan ${statement.sql}`).all(...statement.parameters) as { detail: string }[]).map((r) => r.detail);
      return `statement ${i + 1}: ${steps.filter((d) => /^(SEARCH|SCAN) (transactions|t|transaction_counts)\b|TEMP B-TREE/.test(d)).join("; ")}`;
    }
    const { rows } = await pool!.query(`explain (analyze, format json) ${statement.sql}`, [...statement.parameters]);
    const explained = (rows[0]["QUERY PLAN"] as { Plan: PlanNode; "Planning Time": number; "Execution Time": number }[])[0]!;
    return `statement ${i + 1} (planned ${explained["Planning Time"].toFixed(3)} ms, ran ${explained["Execution Time"].toFixed(3)} ms): ${summarize(explained.Plan)}`;
  };
  try {
    const reads = new TransactionReads(traced, bench.dialect);
    const plans: Record<string, string[]> = {};
    for (const c of cases) {
      const { startingAfter, ...q } = parseListQuery(Object.fromEntries(new URLSearchParams(c.query)));
      const cursor = startingAfter === undefined ? undefined : await reads.cursorOf(projectId, startingAfter);
      issued.length = 0;
      await listTransactions({ ledger: { balances: new Balances(traced, bench.dialect), transactions: reads } }, projectId, { ...q, ...(cursor ? { cursor } : {}) });
      const lines: string[] = [];
      for (const [i, statement] of issued.splice(0).entries()) lines.push(await explain(statement, i));
      plans[`filtered: ${c.name}`] = lines;
    }
    return plans;
  } finally {
    raw?.close();
    await traced.destroy();
  }
}

/** Each table read of a plan: scan, index, how many such reads and the most rows one returned (per loop). */
function summarize(plan: PlanNode): string {
  const reads = new Map<string, { count: number; maxRows: number; loops: number }>();
  for (const { node, above } of planNodes(plan)) {
    if (!node["Relation Name"]) continue;
    const key = `${node["Node Type"]}${node["Scan Direction"] === "Backward" ? " Backward" : ""} on ${node["Relation Name"]}${node["Index Name"] ? ` using ${node["Index Name"]}` : ""}${above.includes("Aggregate") ? " (counting)" : ""}`;
    const r = reads.get(key) ?? { count: 0, maxRows: 0, loops: 0 };
    reads.set(key, { count: r.count + 1, maxRows: Math.max(r.maxRows, node["Actual Rows"]), loops: Math.max(r.loops, node["Actual Loops"]) });
  }
  return [...reads].map(([key, r]) => `${key} ×${r.count}, at most ${r.maxRows} row${r.maxRows === 1 ? "" : "s"}${r.loops > 1 ? ` × ${r.loops} loops` : ""}`).join("; ");
}

type Raw = {
  /** The dialect's placeholder for the n-th parameter. */
  p(n: number): string;
  query(text: string, params: unknown[]): Promise<unknown[]>;
  prepare(text: string): Promise<(params: unknown[]) => Promise<unknown[]>>;
  plan(text: string, params: unknown[]): Promise<string[]>;
  close(): Promise<void>;
};

async function openRaw(bench: BenchContext): Promise<Raw> {
  if (bench.dialect === "sqlite") {
    const db = new SQLite(bench.sqlitePath!, { readonly: true });
    return {
      p: () => "?",
      query: async (text, params) => db.prepare(text).all(...params),
      prepare: async (text) => {
        const statement = db.prepare(text);
        return async (params) => statement.all(...params);
      },
      plan: async (text, params) => (db.prepare(`explain query plan ${text}`).all(...params) as { detail: string }[]).map((r) => r.detail),
      close: async () => {
        db.close();
      },
    };
  }
  const client = new pg.Client({ connectionString: bench.postgresUrl! });
  await client.connect();
  let statements = 0;
  return {
    p: (n) => `$${n}`,
    query: async (text, params) => (await client.query(text, params)).rows,
    prepare: async (text) => {
      // A named statement is parsed and planned once per connection, then only bound and executed.
      const name = `bench_${++statements}`;
      return async (params) => (await client.query({ name, text, values: params })).rows;
    },
    plan: async (text, params) => (await client.query(`explain (analyze, buffers) ${text}`, params)).rows.map((r: { "QUERY PLAN": string }) => r["QUERY PLAN"]),
    close: () => client.end(),
  };
}
