/**
 * `npm run bench -- pay`: POST /v1/pay (usdc_transfer) on the real sandbox server — real database,
 * real chain, real relayer — against a bare Fastify route that runs the same conditional debit SQL
 * on the same database, in one run. Reports payments accepted per second (201 answers under load),
 * settled per second (completed on-chain, from the first request to the last completion), and the
 * ratio of accepted to the ceiling (the mean of one measured before and one after). Target: accepted ≥ 0.7 × ceiling.
 * Then the same load with a token under spending controls (a daily limit it never reaches and an
 * allow-list that names the recipient), which the hold judges in its own write.
 * With `--tree`, the same load again spread over the inner nodes and leaves of a depth-3 tree of child
 * tokens (2 children of an operator's token, 2 below each, 2 below those), each with a daily limit and an
 * allowance it never reaches, so every hold also counts each ancestor's windows.
 * Just before the tree, the load spread over as many flat tokens (no parent, no controls): a flat token's concurrent
 * requests share its lookups (tokens.ts), so one token under many connections reads less than any set of tokens; the
 * tree's rate over theirs is what the nesting itself costs (decisions.md, "What the tree's bench compares").
 * Then the flat token again. Controls and the tree: each within 10 % of the mean of the flat token's two runs (as the
 * ceiling, measured before and after them).
 * The chain is the sandbox's local anvil, started by the bench to mine a block a second (`--mining instant`: the
 * sandbox's own, which also mines one for every transaction).
 * With `--behind nginx` (PostgreSQL): accepted per second on one `agentwallet serve` process, then through nginx in
 * front of two, and their ratio (support/payBehindNginx.ts).
 */
import { parseArgs } from "node:util";
import Fastify from "fastify";
import { sql } from "kysely";
import { openDb, type OpenedDb } from "../packages/server/src/ledger/db.ts";
import { issueToken } from "../packages/server/src/services/tokens.ts";
import { startTestServer } from "../packages/server/src/testing/harness.ts";
import { startDevChain } from "@agentwallet/devchain";
import { type Cell, UsageError, log, machine, printTable, verdict, writeResult, benchDatabase } from "./lib.ts";
import { dbOf } from "../packages/server/src/ledger/connection.ts";
import { payBehindNginx } from "./support/payBehindNginx.ts";
import { type Load, PAY_BODY, type PayRun, RECIPIENT, completedPayments, payAndSettle as payAndSettleOn, post } from "./support/payLoad.ts";

const TARGET_ACCEPT_RATIO_MIN = 0.7;
/** Accepted with controls over accepted without, at least. */
const TARGET_CONTROLS_RATIO_MIN = 0.9;
/** Accepted spread over a token tree over accepted with one flat token, at least. */
const TARGET_TREE_RATIO_MIN = 0.9;
/** Children of each token of the tree, and its depth below the operator's token (TOKEN_DEPTH_MAX's default). */
const TREE_FANOUT = 2;
const TREE_DEPTH = 3;
/** PAY_BODY's 0.01 USDC + 0.0002 fee. */
const DEBIT_MICROS = 10_200;

const HELP = `npm run bench -- pay [flags]
  --db sqlite|postgres   database (default sqlite, synchronous=FULL; postgres uses $TEST_DATABASE_URL or the local server)
  --duration S           seconds of load per target (default 10)
  --warmup S             unmeasured seconds of load on the flat token first, settled before the first measurement (default 3; not with --behind)
  --connections N        concurrent connections (default 16)
  --settle-timeout S     how long to wait for every accepted payment to complete (default 180)
  --settlement thread|inline  where accepted payments settle (default thread, as the server; inline: on the request thread)
  --tree                 also spread the load over 14 flat tokens, then over a depth-3 tree of 14 child tokens, and compare
                         the tree with the flat token and with the 14 flat tokens
  --mining interval|instant  the local chain mines a block a second (default), or also one for every transaction at once,
                         as the sandbox of \`npm start\` does (not with --behind; decisions.md, "The pay bench's chain mines once a second")
  --behind nginx         with --db postgres: POST /v1/pay on one \`agentwallet serve\` process reached directly, then through
                         nginx (deploy/nginx/agentwallet.conf, TLS, keep-alive) in front of two processes on the same
                         database, on a local chain; prints proxy/direct for accepted/s (no ceiling, controls or --tree)`;

/** The server's settings for a run: never throttled, quiet, settling where --settlement says. */
const serverEnv = (settlement: string): NodeJS.ProcessEnv => ({ RATE_LIMIT_PER_MINUTE: "1000000000", LOG_LEVEL: "warn", WORKER_INTERVAL_MS: "200", SETTLEMENT: settlement });

export async function run(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: { db: { type: "string", default: "sqlite" }, duration: { type: "string", default: "10" }, warmup: { type: "string", default: "3" }, connections: { type: "string", default: "16" }, "settle-timeout": { type: "string", default: "180" }, settlement: { type: "string", default: "thread" }, tree: { type: "boolean", default: false }, mining: { type: "string", default: "interval" }, behind: { type: "string" }, help: { type: "boolean", default: false } },
  });
  if (values.help) return void console.log(HELP);
  if (values.db !== "sqlite" && values.db !== "postgres") throw new UsageError("--db must be sqlite or postgres");
  if (values.settlement !== "thread" && values.settlement !== "inline") throw new UsageError("--settlement must be thread or inline");
  if (values.mining !== "interval" && values.mining !== "instant") throw new UsageError("--mining must be interval or instant");
  const duration = Number(values.duration);
  const connections = Number(values.connections);
  const settleTimeoutS = Number(values["settle-timeout"]);
  const warmup = Number(values.warmup);
  if (!(warmup >= 0)) throw new UsageError("--warmup must be a number of seconds, 0 or more");
  if (!(duration > 0 && connections > 0 && settleTimeoutS > 0)) throw new UsageError("--duration, --connections and --settle-timeout must be positive numbers");
  if (values.behind !== undefined) {
    if (values.behind !== "nginx") throw new UsageError(`--behind takes nginx (got "${values.behind}")`);
    if (values.db !== "postgres") throw new UsageError("--behind nginx runs two server processes on one database: it needs --db postgres (a SQLite file serves one process)");
    if (values.tree) throw new UsageError("--tree is measured in one process only: leave it out with --behind nginx");
    return payBehindNginx({ duration, connections, settleTimeoutS, settlement: values.settlement, env: serverEnv(values.settlement) });
  }

  const database = values.db;
  const { databaseUrl, drop: dropSchema } = await benchDatabase(database);
  log(`starting the sandbox server (${values.db}, real anvil chain mining ${values.mining === "interval" ? "a block a second" : "a block for each transaction"}, settlement ${values.settlement})…`);
  // anvil's time per block grows with the chain's storage (each payment adds its authorizations' nonces): a block a
  // second, as Base mines on an interval, keeps the chain's share of the cores from growing load by load. The
  // sandbox's own chain (`--mining instant`) mines a block for each transaction besides.
  const chain =
    values.mining === "interval"
      ? await startDevChain({ blockTime: 1 }).catch(async (err: unknown) => {
          await dropSchema();
          throw err;
        })
      : undefined;
  const server = await startTestServer({ database: values.db, databaseUrl, env: { ...serverEnv(values.settlement), ...(chain ? { SANDBOX_CHAIN_RPC_URL: chain.rpcUrl } : {}) } }).catch(async (err: unknown) => {
    await chain?.stop();
    await dropSchema();
    throw err;
  });
  const ctx = server.server.ctx;
  const bare = Fastify({ logger: false });
  let bareDb: OpenedDb | undefined;
  try {
    await server.fund(10_000_000_000n); // 10,000 USDC: enough for ~980,000 payments
    // The ceiling: the same conditional debit the hold runs, on the same database, on another project.
    // On SQLite over a connection of its own with SQLite's defaults (WAL, synchronous=FULL, checkpoints
    // every 1,000 pages), as a bare app would open it: the service's own connection settings (it
    // leaves checkpoints to its settlement thread) must not move the ceiling.
    bareDb = values.db === "sqlite" ? openDb({ kind: "sqlite", path: ctx.config.sqlitePath }) : undefined;
    const ceilingDb = bareDb?.db ?? dbOf(ctx.ledger);
    const ceilingProject = await ctx.ledger.projects.create({ name: "ceiling", plan: "free" });
    await dbOf(ctx.ledger).updateTable("balances").set({ available_micros: 9_000_000_000_000 }).where("project_id", "=", ceilingProject.id).execute();
    bare.post("/debit", async () => {
      const row = await sql<{ available_micros: number }>`update balances set available_micros = available_micros - ${DEBIT_MICROS}, held_micros = held_micros + ${DEBIT_MICROS} where project_id = ${ceilingProject.id} and available_micros >= ${DEBIT_MICROS} returning available_micros`.execute(ceilingDb);
      return { ok: row.rows.length === 1 };
    });
    const bareUrl = await bare.listen({ host: "127.0.0.1", port: 0 });

    log(`ceiling: bare Fastify + the debit SQL, ${connections} connections, ${duration} s…`);
    const ceiling = await post(`${bareUrl}/debit`, {}, "{}", connections, duration, 200);

    /** The load on POST /v1/pay with `token`, then the wait until every accepted payment completed. */
    const payAndSettle = (token: string | string[]) =>
      payAndSettleOn({ baseUrl: server.baseUrl, tokens: typeof token === "string" ? [token] : token, connections, duration, settleTimeoutS, ledger: ctx.ledger, database });

    // The service's first load compiles its paths and fills its caches: unmeasured, and settled before the first.
    if (warmup > 0) {
      log(`warm-up: POST /v1/pay, ${connections} connections, ${warmup} s, unmeasured…`);
      await payAndSettleOn({ baseUrl: server.baseUrl, tokens: [server.token], connections, duration: warmup, settleTimeoutS, ledger: ctx.ledger });
    }
    const warmedUp = await completedPayments(ctx.ledger);
    log(`POST /v1/pay (usdc_transfer), ${connections} connections, ${duration} s…`);
    const flat = await payAndSettle(server.token);
    const { pay, startedAt, settledAt, open } = flat;
    const completedBefore = (await completedPayments(ctx.ledger)) - warmedUp;

    // The same with an agent's token under controls: a daily limit far above the run and an allow-list.
    const controlled = await issueToken(ctx, {
      projectId: server.projectId,
      permissions: ["read", "pay", "x402"],
      mode: "test",
      controls: { spending_limits: [{ amount_usd: 1_000_000, interval: "daily" }, { amount_usd: 100, interval: "per_payment" }], allowed_recipients: [RECIPIENT, "api.example.com"] },
    });
    log(`POST /v1/pay with a token under spending controls, ${connections} connections, ${duration} s…`);
    const withControls = await payAndSettle(controlled.token);

    let tree: { nodes: number; run: PayRun; flats: PayRun } | undefined;
    if (values.tree) {
      const nodes = await tokenTree(server.baseUrl, await server.createToken(["read", "pay", "delegate"]));
      const flatTokens: string[] = [];
      for (const _ of nodes) flatTokens.push(await server.createToken(["read", "pay"]));
      log(`POST /v1/pay spread over ${flatTokens.length} flat tokens, ${connections} connections, ${duration} s…`);
      const flats = await payAndSettle(flatTokens);
      log(`POST /v1/pay spread over ${nodes.length} tokens of a depth-${TREE_DEPTH} tree, ${connections} connections, ${duration} s…`);
      tree = { nodes: nodes.length, run: await payAndSettle(nodes), flats };
    }
    // The flat token again, as the ceiling is measured again: the database and the local chain grow and the machine
    // drifts over a run (anvil's time per payment rose from 55–129 to 169–361 µs with a block a second, more with a block
    // for every transaction: decisions.md), so the loads measured after the first (controls, the tree) are compared with
    // the mean of the flat token's rate before and after them.
    log(`POST /v1/pay with the flat token again, ${connections} connections, ${duration} s…`);
    const flatAgain = await payAndSettle(server.token);

    // The ceiling again, now that nothing settles: the machine's disk and cores drift over a run, so
    // the ratio is taken against the mean of the ceilings measured before and after. The payments
    // left a log of tens of MB behind them; the bare route's connection would spend its commits
    // checkpointing it (a third of its rate), so the log is emptied first, as it was for the first.
    // Payments a load left open past --settle-timeout still settle: the second ceiling would then be taken beside
    // them (lower, raising every ratio), and emptying the log waits for a pause in their writes (11 minutes once, with
    // 20,657 open). The ratios then take the first ceiling alone.
    const settling = await ctx.ledger.payments.openPaymentCount();
    let ceilingAfter: Load | undefined;
    if (settling === 0) {
      if (bareDb) await sql`pragma wal_checkpoint(TRUNCATE)`.execute(bareDb.db);
      log(`ceiling again: ${duration} s…`);
      ceilingAfter = await post(`${bareUrl}/debit`, {}, "{}", connections, duration, 200);
    } else log(`ceiling again: not measured, ${settling} payments still settle; the ratios take the first ceiling alone`);
    const ceilingMean = ceilingAfter ? (ceiling.reqPerSec + ceilingAfter.reqPerSec) / 2 : ceiling.reqPerSec;

    // Diagnostic, not the target: the accept path alone, with submission paused (payments stay
    // pending under their leases), to show what accepting costs when nothing else runs on the cores.
    // The context is frozen; its `dispatch` hands over to the server's settlement, paused here instead.
    log("diagnostic: POST /v1/pay with submission paused…");
    const settlement = server.server.settlement;
    const dispatch = settlement.dispatch;
    settlement.dispatch = () => {};
    const acceptOnly = await post(`${server.baseUrl}/v1/pay`, { authorization: `Bearer ${server.token}` }, PAY_BODY, connections, Math.min(duration, 5), 201);
    settlement.dispatch = dispatch;
    const counts = await dbOf(ctx.ledger).selectFrom("payments").select(["status", (eb) => eb.fn.countAll<number>().as("n")]).groupBy("status").execute();
    const completed = completedBefore;
    /** Accepted per second over a load's own span. */
    const perSec = (r: Pick<PayRun, "pay" | "startedAt" | "acceptedAt">) => r.pay.ok / ((r.acceptedAt - r.startedAt) / 1000);
    const acceptedPerSec = perSec(flat);
    const settledPerSec = completed / ((settledAt - startedAt) / 1000);
    const ratio = acceptedPerSec / ceilingMean;
    const controlledPerSec = perSec(withControls);
    const controlledRatio = controlledPerSec / ceilingMean;
    const flatAgainPerSec = perSec(flatAgain);
    const flatMean = (acceptedPerSec + flatAgainPerSec) / 2;
    const controlsVsNone = controlledPerSec / flatMean;
    const controlsVsBefore = controlledPerSec / acceptedPerSec;
    const treePerSec = tree ? perSec(tree.run) : undefined;
    const treeVsFlat = treePerSec === undefined ? undefined : treePerSec / flatMean;
    const flatsPerSec = tree ? perSec(tree.flats) : undefined;
    const treeVsFlats = treePerSec === undefined || flatsPerSec === undefined ? undefined : treePerSec / flatsPerSec;

    const rows: Cell[][] = [
      ["ceiling: bare Fastify + debit SQL, before", Math.round(ceiling.reqPerSec), ceiling.p50Ms, ceiling.p99Ms, "-"],
      ceilingAfter
        ? ["ceiling: the same, after settling", Math.round(ceilingAfter.reqPerSec), ceilingAfter.p50Ms, ceilingAfter.p99Ms, `mean ${Math.round(ceilingMean)}`]
        : ["ceiling: the same, after settling", "-", "-", "-", `not measured: ${settling} payments still settling`],
      ["POST /v1/pay accepted (201)", Math.round(acceptedPerSec), pay.p50Ms, pay.p99Ms, `${ratio.toFixed(2)} × ceiling`],
      ["settled on-chain (completed)", Math.round(settledPerSec), "-", "-", `${completed} of ${pay.ok} in ${((settledAt - startedAt) / 1000).toFixed(1)} s`],
      ["POST /v1/pay accepted, token under controls", Math.round(controlledPerSec), withControls.pay.p50Ms, withControls.pay.p99Ms, `${controlledRatio.toFixed(2)} × ceiling, ${controlsVsNone.toFixed(2)} × without (${controlsVsBefore.toFixed(2)} × the run before)`],
      ...(tree && treePerSec !== undefined && flatsPerSec !== undefined
        ? ([
            [`POST /v1/pay accepted, over ${tree.nodes} flat tokens`, Math.round(flatsPerSec), tree.flats.pay.p50Ms, tree.flats.pay.p99Ms, `${(flatsPerSec / ceilingMean).toFixed(2)} × ceiling, ${(flatsPerSec / flatMean).toFixed(2)} × flat token`],
            [`POST /v1/pay accepted, over a depth-${TREE_DEPTH} tree (${tree.nodes} tokens)`, Math.round(treePerSec), tree.run.pay.p50Ms, tree.run.pay.p99Ms, `${(treePerSec / ceilingMean).toFixed(2)} × ceiling, ${treeVsFlat!.toFixed(2)} × flat token, ${treeVsFlats!.toFixed(2)} × ${tree.nodes} flat tokens`],
          ] as Cell[][])
        : []),
      ["POST /v1/pay accepted, the flat token again", Math.round(flatAgainPerSec), flatAgain.pay.p50Ms, flatAgain.pay.p99Ms, `flat token mean ${Math.round(flatMean)}`],
      ["(diagnostic) accepted, submission paused", Math.round(acceptOnly.ok / Math.min(duration, 5)), acceptOnly.p50Ms, acceptOnly.p99Ms, `${(acceptOnly.ok / Math.min(duration, 5) / ceilingMean).toFixed(2)} × ceiling`],
    ];
    console.log(`\nmachine: ${JSON.stringify(machine())}`);
    printTable(["target", "per second", "p50 ms", "p99 ms", "note"], rows);
    // Diagnostic: what each load cost the request thread and the chain per accepted payment (support/payLoad.ts), which a
    // rate on two shared cores mixes with whatever else ran.
    const threads: [string, PayRun][] = [
      ["flat token", flat],
      ["token under controls", withControls],
      ...(tree ? ([[`${tree.nodes} flat tokens`, tree.flats], [`depth-${TREE_DEPTH} tree`, tree.run]] as [string, PayRun][]) : []),
      ["flat token again", flatAgain],
    ];
    const threadRows: Cell[][] = threads.flatMap(([name, r]) =>
      r.thread ? [[name, Math.round(r.thread.cpuUs), Math.round(r.thread.waitUs), Math.round(r.thread.settlementUs), Math.round(r.thread.otherUs), r.thread.chainUs === undefined ? "-" : Math.round(r.thread.chainUs), r.thread.databaseUs === undefined ? "-" : Math.round(r.thread.databaseUs), Math.round(1e6 / perSec(r))]] : [],
    );
    if (threadRows.length > 0) {
      console.log("\nper accepted payment, the request thread's time, settlement's threads', the process's other threads', the local chain's and the local PostgreSQL's (diagnostic):");
      printTable(["load", "µs on a core", "µs waiting for a core", "settlement µs", "other threads µs", "chain's µs", "database's µs", "µs between accepts"], threadRows);
    }
    console.log(`\naccepted ≥ ${TARGET_ACCEPT_RATIO_MIN} × ceiling: ${verdict(ratio >= TARGET_ACCEPT_RATIO_MIN)} (${ratio.toFixed(2)})`);
    console.log(`accepted with controls ≥ ${TARGET_CONTROLS_RATIO_MIN} × without: ${verdict(controlsVsNone >= TARGET_CONTROLS_RATIO_MIN)} (${controlsVsNone.toFixed(2)})`);
    if (treeVsFlat !== undefined) console.log(`accepted over a token tree ≥ ${TARGET_TREE_RATIO_MIN} × flat token: ${verdict(treeVsFlat >= TARGET_TREE_RATIO_MIN)} (${treeVsFlat.toFixed(2)})`);
    if (tree && treeVsFlats !== undefined) console.log(`accepted over a token tree ≥ ${TARGET_TREE_RATIO_MIN} × as many flat tokens: ${verdict(treeVsFlats >= TARGET_TREE_RATIO_MIN)} (${treeVsFlats.toFixed(2)})`);
    const stillOpen = open + withControls.open + flatAgain.open + (tree ? tree.run.open + tree.flats.open : 0);
    if (stillOpen > 0) console.log(`WARNING: ${stillOpen} payments still open after ${settleTimeoutS} s`);
    const file = writeResult(`pay-${values.db}`, { machine: machine(), db: values.db, settlement: values.settlement, connections, duration, ceiling, ceilingAfter: ceilingAfter ?? null, ceilingMean, pay, acceptOnly, acceptedPerSec, settledPerSec, completed, statuses: counts, ratio, withControls: { pay: withControls.pay, acceptedPerSec: controlledPerSec, ratio: controlledRatio, vsWithout: controlsVsNone, vsRunBefore: controlsVsBefore }, flatAgain: { pay: flatAgain.pay, acceptedPerSec: flatAgainPerSec }, flatMeanPerSec: flatMean, threads: Object.fromEntries(threads.map(([name, r]) => [name, r.thread ?? null])), ...(tree ? { tree: { nodes: tree.nodes, pay: tree.run.pay, acceptedPerSec: treePerSec, vsFlat: treeVsFlat, vsFlatTokens: treeVsFlats, flatTokens: { pay: tree.flats.pay, acceptedPerSec: flatsPerSec } } } : {}) });
    console.log(`result: ${file}`);
  } finally {
    await bare.close();
    await bareDb?.close();
    await server.stop();
    await chain?.stop();
    await dropSchema();
  }
}

/**
 * A depth-TREE_DEPTH tree of child tokens below `root`, TREE_FANOUT children each, created through
 * POST /v1/tokens; each with a daily limit and an allowance the run never reaches. Returns every token
 * below the root, inner nodes and leaves, breadth first.
 */
async function tokenTree(baseUrl: string, root: string): Promise<string[]> {
  const all: string[] = [];
  let level = [root];
  for (let depth = 1; depth <= TREE_DEPTH; depth++) {
    const next: string[] = [];
    for (const parent of level) {
      for (let i = 0; i < TREE_FANOUT; i++) {
        const res = await fetch(`${baseUrl}/v1/tokens`, {
          method: "POST",
          headers: { authorization: `Bearer ${parent}`, "content-type": "application/json" },
          body: JSON.stringify({ name: `bench d${depth} #${next.length + 1}`, permissions: depth < TREE_DEPTH ? ["read", "pay", "delegate"] : ["read", "pay"], allowance_usd: 1_000_000 - depth, spending_controls: { spending_limits: [{ amount_usd: 1_000_000 - depth, interval: "daily" }] } }),
        });
        const body = (await res.json()) as { token?: string; detail?: string };
        if (res.status !== 201 || !body.token) throw new Error(`creating a child token: ${res.status} ${body.detail ?? ""}`);
        next.push(body.token);
      }
    }
    all.push(...next);
    level = next;
  }
  return all;
}
