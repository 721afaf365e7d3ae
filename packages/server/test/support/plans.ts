/** What the plan tests read: a PostgreSQL test schema with a Kysely that records every statement it issues, and the plans of those statements. */
import { type CompiledQuery, Kysely, PostgresDialect } from "kysely";
import pg from "pg";
import type { Database } from "../../src/ledger/schema.ts";
import { createTestDb, type TestDb } from "./db.ts";

export type PlanNode = { "Node Type": string; "Relation Name"?: string; "Index Name"?: string; "Actual Rows": number; "Actual Loops": number; Plans?: PlanNode[] };

/** Every node of a plan, with the node types above it. */
export function planNodes(plan: PlanNode, above: string[] = []): { node: PlanNode; above: string[] }[] {
  return [{ node: plan, above }, ...(plan.Plans ?? []).flatMap((p) => planNodes(p, [...above, plan["Node Type"]]))];
}

export type TracedPostgres = { db: TestDb; pool: pg.Pool; traced: Kysely<Database>; issued: CompiledQuery[]; explain(statement: CompiledQuery): Promise<PlanNode>; close(): Promise<void> };

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
