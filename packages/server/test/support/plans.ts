/** What the plan tests read: a PostgreSQL test schema with a Kysely that records every statement it issues, and the plans of those statements. */
import { type CompiledQuery, Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import type { Database } from "../../src/ledger/schema.ts";
import { createTestDb, type TestDb } from "./db.ts";

export type PlanNode = { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; "Index Cond"?: string; "Scan Direction"?: string; "Actual Rows": number; "Actual Loops": number; Plans?: PlanNode[] };

/** Every node of a plan, with the node types above it. */
export function planNodes(plan: PlanNode, above: string[] = []): { node: PlanNode; above: string[] }[] {
  return [{ node: plan, above }, ...(plan.Plans ?? []).flatMap((p) => planNodes(p, [...above, plan["Node Type"]]))];
}

export type TracedPostgres = { db: TestDb; pool: pg.Pool; traced: Kysely<Database>; issued: CompiledQuery[]; explain(statement: CompiledQuery): Promise<PlanNode>; close(): Promise<void> };

let prepared = 0;

/** A parameter as SQL text: a literal, or an array of literals. */
function literal(client: pg.PoolClient, v: unknown): string {
  if (Array.isArray(v)) return `array[${v.map((x) => literal(client, x)).join(", ")}]::text[]`;
  if (typeof v === "number") return String(v);
  return client.escapeLiteral(String(v));
}

/**
 * The generic plan of a statement (the one PostgreSQL may keep for a prepared statement after its fifth run,
 * planned without its parameters' values), run with these values: what a statement prepared once per
 * connection (ledger/db.ts `pgDirectOf`) may execute.
 */
export async function explainGeneric(pool: pg.Pool, statement: CompiledQuery): Promise<PlanNode> {
  const client = await pool.connect();
  // The driver remembers the names it prepared on a connection: a name is never used twice.
  const name = `aw_plan_test_${++prepared}`;
  try {
    await client.query("set plan_cache_mode = force_generic_plan");
    await client.query({ name, text: statement.sql, values: [...statement.parameters] });
    const args = statement.parameters.map((v) => literal(client, v)).join(", ");
    const { rows } = await client.query(`explain (analyze, format json) execute ${name}(${args})`);
    await client.query(`deallocate ${name}`);
    return (rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan;
  } finally {
    await client.query("reset plan_cache_mode").catch(() => undefined);
    client.release();
  }
}

export async function tracedPostgres(): Promise<TracedPostgres> {
  const db = await createTestDb("postgres");
  const pool = new pg.Pool({ connectionString: db.url, max: 2 });
  const issued: CompiledQuery[] = [];
  const traced = new Kysely<Database>({ dialect: new PostgresDialect({ pool }), log: (e) => void (e.level === "query" && issued.push(e.query)) });
  return {
    db,
    pool,
    traced,
    issued,
    async explain(statement) {
      const { rows } = await pool.query(`explain (analyze, format json) ${statement.sql}`, statement.parameters as unknown[]);
      return (rows[0]["QUERY PLAN"] as { Plan: PlanNode }[])[0]!.Plan;
    },
    async close() {
      await traced.destroy();
      await db.drop();
    },
  };
}
