/**
 * Run as a process of its own under `--trace-gc-nvp` (pgResultRetention.test.ts): reads of 50 rows, one at a
 * time, through the ledger's Kysely on PostgreSQL (`ledger`) or through pg's own promise API (`pg-promise`).
 * Arguments: mode, database URL, number of reads.
 */
import { sql } from "kysely";
import pg from "pg";
import { openDb } from "../../src/ledger/db.ts";

const ROWS = "select g as id, md5(g::text) as a, md5((g + 1)::text) as b, 'completed' as status, now()::text as created_at, md5((g + 2)::text) as c from generate_series(1, 50) g";

const [mode, url, n] = process.argv.slice(2);
const reads = Number(n);
let rows = 0;
if (mode === "ledger") {
  const opened = openDb({ kind: "postgres", url: url! });
  for (let i = 0; i < reads; i++) rows += (await sql.raw(ROWS).execute(opened.db)).rows.length;
  await opened.close();
} else if (mode === "pg-promise") {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  for (let i = 0; i < reads; i++) rows += (await client.query(ROWS)).rows.length;
  await client.end();
} else throw new Error(`unknown mode ${mode}`);
console.log(`rows ${rows}`);
